package sandbox

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/fsdrun/fsd/internal/testbin"
)

// tlsServer is a loopback HTTPS server answering name, counting requests.
func tlsServer(t *testing.T, name string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, name)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// httpsClients are the everyday programs a skill fetches with, each
// going through the proxy variables even for a loopback address (the
// test's servers are on loopback, which NO_PROXY names) and trusting the
// test's certificate.
func httpsClients(t *testing.T) map[string]func(url string) string {
	clients := map[string]func(string) string{}
	if _, err := exec.LookPath("curl"); err == nil {
		clients["curl"] = func(url string) string { return "curl -sS -k --noproxy '' --max-time 20 " + url }
	}
	// pyenv's shim needs the user's HOME; the sandbox is given another.
	testbin.PythonFirst()
	if out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output(); err == nil {
		py := strings.TrimSpace(string(out))
		clients["python urllib"] = func(url string) string {
			return py + ` -c '
import os, ssl, sys, urllib.request
for k in ("NO_PROXY", "no_proxy"):
    os.environ.pop(k, None)
try:
    sys.stdout.write(urllib.request.urlopen(sys.argv[1], context=ssl._create_unverified_context(), timeout=20).read().decode())
except Exception as e:
    sys.exit(str(e))
' ` + url
		}
	}
	if len(clients) == 0 {
		t.Skip("neither curl nor python3 is installed")
	}
	return clients
}

func TestNetHostsWithEverydayClients(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) { netHostsWithEverydayClients(t, b) })
	}
}

func netHostsWithEverydayClients(t *testing.T, backend string) {
	available(t, backend)
	allowed, _ := tlsServer(t, "allowed")
	other, otherHits := tlsServer(t, "other")
	host := strings.TrimPrefix(allowed.URL, "https://")
	otherHost := strings.TrimPrefix(other.URL, "https://")
	ws := t.TempDir()
	hosts := Policy{Workspace: ws, Network: NetHosts, Hosts: []string{host}}
	off := Policy{Workspace: ws, Network: NetOff}
	env := testEnv(ws)

	for name, fetch := range httpsClients(t) {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := sandboxed(t, backend, hosts, env, fetch(allowed.URL))
			if err != nil || out != "allowed" {
				t.Fatalf("a listed host: %q, %v (stderr %s), want its answer", out, err, errOut)
			}
			out, errOut, err = sandboxed(t, backend, hosts, env, fetch(other.URL))
			if err == nil {
				t.Fatalf("a host not listed was reached: %q", out)
			}
			if want := "fsd sandbox: the network to " + otherHost + " is not allowed"; !strings.Contains(errOut, want) {
				t.Errorf("stderr %q does not say %q", errOut, want)
			}
			for _, u := range []string{allowed.URL, other.URL} {
				if out, _, err := sandboxed(t, backend, off, testEnv(ws), fetch(u)); err == nil {
					t.Errorf("network off reached %s: %q", u, out)
				}
			}
		})
	}
	if n := otherHits.Load(); n != 0 {
		t.Errorf("the unlisted server got %d requests", n)
	}
}

func TestNetHostsReplacesTheProgramsProxy(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) { netHostsReplacesTheProgramsProxy(t, b) })
	}
}

func netHostsReplacesTheProgramsProxy(t *testing.T, backend string) {
	available(t, backend)
	ws := t.TempDir()
	// env, not a shell: a shell would hide a name given twice.
	cmd := exec.Command("/usr/bin/env")
	cmd.Dir = ws
	cmd.Env = append(testEnv(ws), "HTTPS_PROXY=http://proxy.invalid:3128", "no_proxy=*")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cleanup := useBackend(t, backend, cmd, Policy{Workspace: ws, Network: NetHosts, Hosts: []string{"example.com"}})
	defer cleanup()
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for line := range strings.Lines(string(out)) {
		if k, _, _ := strings.Cut(line, "="); k == "HTTPS_PROXY" || k == "no_proxy" {
			got = append(got, strings.TrimSpace(line))
		}
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "HTTPS_PROXY=http://127.0.0.1:") && !strings.HasPrefix(got[1], "HTTPS_PROXY=http://127.0.0.1:") || slices.Contains(got, "no_proxy=*") {
		t.Errorf("the program's proxy variables: %q, want the sandbox's alone", got)
	}
}

func TestNetOffSetsNoProxy(t *testing.T) {
	available(t, backendNative)
	ws := t.TempDir()
	out, _, err := sandboxed(t, backendNative, Policy{Workspace: ws, Network: NetOff}, testEnv(ws), "env")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(out), "_proxy=") {
		t.Errorf("network off has proxy variables: %s", out)
	}
}
