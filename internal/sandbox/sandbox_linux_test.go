package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sandboxed runs script with sh in a sandbox of backend under p, as
// package proc starts programs (own process group, Pdeathsig), and
// returns its output and error.
func sandboxed(t testing.TB, backend string, p Policy, env []string, script string) (string, string, error) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = p.Workspace
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cleanup := useBackend(t, backend, cmd, p)
	defer cleanup()
	cmd.WaitDelay = time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// useBackend wraps cmd with the backend asked for, skipping the test when
// it cannot be had here.
func useBackend(t testing.TB, backend string, cmd *exec.Cmd, p Policy) func() {
	t.Helper()
	if backend == "plain" {
		return func() {}
	}
	available(t, backend)
	old := forced
	forced = backend
	defer func() { forced = old }()
	cleanup, err := Wrap(cmd, p)
	if err != nil {
		t.Fatalf("Wrap: %v", err)
	}
	return cleanup
}

// available skips t when backend cannot be had here.
func available(t testing.TB, backend string) {
	t.Helper()
	switch backend {
	case backendBwrap:
		if _, err := exec.LookPath("bwrap"); err != nil {
			// .ci/run installs it: under CI the fallback must be tested.
			if os.Getenv("CI") != "" {
				t.Fatal("bwrap is not installed (apt-get install bubblewrap)")
			}
			t.Skip("bwrap is not installed (apt-get install bubblewrap)")
		}
	case backendNative:
		nativeOnce.Do(func() { nativeErr = probeNative() })
		if nativeErr != nil {
			t.Skipf("native sandbox unavailable: %v", nativeErr)
		}
	}
}

var (
	nativeOnce sync.Once
	nativeErr  error
)

var backends = []string{backendNative, backendBwrap}

// testEnv is a program's environment with home as HOME.
func testEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
}

func TestWritesOnlyInWorkspaceAndTmp(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			ws, outside := t.TempDir(), t.TempDir()
			out, errOut, err := sandboxed(t, b, Policy{Workspace: ws}, testEnv(t.TempDir()),
				`echo in > inside.txt && echo tmp > /tmp/t && cat /tmp/t && echo out > `+outside+`/escaped.txt`)
			if err == nil {
				t.Errorf("writing outside the workspace succeeded (stdout %q)", out)
			}
			if _, serr := os.Stat(filepath.Join(outside, "escaped.txt")); serr == nil {
				t.Error("the file outside the workspace was written")
			}
			if b, rerr := os.ReadFile(filepath.Join(ws, "inside.txt")); rerr != nil || string(b) != "in\n" {
				t.Errorf("inside the workspace: %q, %v (stderr %q)", b, rerr, errOut)
			}
			if strings.TrimSpace(out) != "tmp" {
				t.Errorf("private /tmp: stdout %q, stderr %q", out, errOut)
			}
		})
	}
}

// A home secret is unreadable: outside the granted paths (Landlock, or
// absent under bwrap) and inside them (hidden).
func TestHomeSecretsUnreadable(t *testing.T) {
	for _, b := range backends {
		for _, granted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/home granted %v", b, granted), func(t *testing.T) {
				home := t.TempDir()
				key := filepath.Join(home, ".ssh", "id_ed25519")
				if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(key, []byte("PRIVATE KEY\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(home, "notes.txt"), []byte("notes\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				p := Policy{Workspace: t.TempDir()}
				if granted {
					p.Read = []string{home}
				}
				out, errOut, _ := sandboxed(t, b, p, testEnv(home), `cat "$HOME/.ssh/id_ed25519"; cat "$HOME/notes.txt"`)
				if strings.Contains(out, "PRIVATE KEY") {
					t.Errorf("the sandboxed program read the key: %q", out)
				}
				if granted && !strings.Contains(out, "notes") {
					t.Errorf("a granted file was not readable: stdout %q, stderr %q", out, errOut)
				}
			})
		}
	}
}

// With the network off, a TCP connect to a listener of the test on
// loopback fails; with it on, it works.
func TestNetworkOff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for _, b := range backends {
		for _, mode := range []NetMode{NetOff, NetOn} {
			t.Run(b+"/"+string(mode), func(t *testing.T) {
				ws := t.TempDir()
				cmd := exec.Command(os.Args[0], ln.Addr().String())
				cmd.Dir = ws
				cmd.Env = append(testEnv(t.TempDir()), helperEnv+"=dial")
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
				cleanup := useBackend(t, b, cmd, Policy{Workspace: ws, Network: mode})
				defer cleanup()
				out, err := cmd.CombinedOutput()
				if mode == NetOff && err == nil {
					t.Errorf("connected to %s with the network off: %s", ln.Addr(), out)
				}
				if mode == NetOn && err != nil {
					t.Errorf("network on: %v: %s", err, out)
				}
			})
		}
	}
}

// A fork bomb stops at MaxProcs and the call ends.
func TestForkBombBounded(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			ws := t.TempDir()
			p := Policy{Workspace: ws, MaxProcs: 20}
			out, errOut, err := sandboxed(t, b, p, testEnv(t.TempDir()),
				`i=0; while [ $i -lt 100 ]; do sleep 30 & i=$((i+1)); echo $i; done`)
			lines := strings.Fields(out)
			if len(lines) >= 100 || err == nil {
				t.Errorf("started %d of 100 background processes (bound 20), err %v", len(lines), err)
			}
			if e := Explain(errOut, p); !strings.Contains(e, "max-procs") {
				t.Errorf("Explain(%q) = %q, want the max-procs setting", errOut, e)
			}
		})
	}
}

// No process of the sandbox sees fsd's environment (its API keys) in
// /proc.
func TestProcHidesParentEnviron(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			available(t, b)
			fsd := fakeFsdCommand(b, t.TempDir(), `cat /proc/[0-9]*/environ 2>/dev/null | tr '\000' '\n'; echo done`,
				"ANTHROPIC_API_KEY=sk-parent-secret-value")
			out, err := fsd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "done") {
				t.Fatalf("fake fsd: %v: %s", err, out)
			}
			if strings.Contains(string(out), "sk-parent-secret-value") {
				t.Errorf("a sandboxed program read fsd's environment through /proc")
			}
		})
	}
}

// Where no sandbox can be had, Wrap fails closed with an error naming
// both fixes, and nothing runs.
func TestUnavailableFailsClosed(t *testing.T) {
	old := forced
	forced = "none"
	defer func() { forced = old }()
	cmd := exec.Command("true")
	_, err := Wrap(cmd, Policy{Workspace: t.TempDir()})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Wrap = %v, want ErrUnavailable", err)
	}
	for _, fix := range []string{"install bubblewrap", "user namespaces", "`sandbox: off`"} {
		if !strings.Contains(err.Error(), fix) {
			t.Errorf("the error %q does not name %q", err, fix)
		}
	}
	if cmd.Path != "/usr/bin/true" && !strings.HasSuffix(cmd.Path, "/true") {
		t.Errorf("the command was changed: %s", cmd.Path)
	}
}

// A PATH root that holds a home secret is granted only as the PATH
// entry; secrets inside a granted folder are hidden.
func TestPlanSecrets(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{".cargo/bin", ".pyenv/shims", ".ssh"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".cargo/credentials.toml"), []byte("token"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + home + "/.cargo/bin:" + home + "/.pyenv/shims:/usr/bin"}
	pl := makePlan(Policy{Read: []string{home}}, env, "/usr/bin/true")
	real, _ := filepath.EvalSymlinks(home)
	for _, want := range []string{real + "/.cargo/bin", real + "/.pyenv", real} {
		if !slices.Contains(pl.Read, want) {
			t.Errorf("%s is not readable: %v", want, pl.Read)
		}
	}
	if slices.Contains(pl.Read, real+"/.cargo") {
		t.Errorf("~/.cargo, which holds credentials, is readable whole")
	}
	for _, want := range []string{real + "/.ssh", real + "/.cargo/credentials.toml"} {
		if !slices.Contains(pl.Mask, want) {
			t.Errorf("%s is not hidden: %v", want, pl.Mask)
		}
	}
}

// Under network: [hosts] a program reaches a listed host through the
// proxy, is refused another, and reaches nothing directly.
func TestNetworkHosts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "hello") }))
	defer srv.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "other") }))
	defer other.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, b := range backends {
		for _, tt := range []struct {
			name, helper, arg, want string
		}{
			{"listed", "get", srv.URL, "200 hello"},
			{"not listed", "get", other.URL, "403 "},
			{"not listed says why", "status", other.URL, "fsd sandbox: the network to"},
			{"direct", "dial", host, ""},
		} {
			t.Run(b+"/"+tt.name, func(t *testing.T) {
				ws := t.TempDir()
				cmd := exec.Command(os.Args[0], tt.arg)
				cmd.Dir = ws
				cmd.Env = append(testEnv(t.TempDir()), helperEnv+"="+tt.helper)
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
				cleanup := useBackend(t, b, cmd, Policy{Workspace: ws, Network: NetHosts, Hosts: []string{host}})
				defer cleanup()
				out, err := cmd.CombinedOutput()
				if tt.want == "" {
					if err == nil {
						t.Errorf("a direct connection to %s worked: %s", host, out)
					}
					return
				}
				if err != nil || !strings.Contains(string(out), tt.want) {
					t.Errorf("got %v: %q, want %q", err, out, tt.want)
				}
			})
		}
	}
}

func TestDescribe(t *testing.T) {
	available(t, backendNative)
	got := Describe(Policy{Workspace: "/w", Write: []string{"/data"}, Network: NetHosts, Hosts: []string{"pypi.org"}, MaxProcs: 64})
	for _, want := range []string{"sandbox: landlock+namespaces", "network only pypi.org", "writable: /w, /data, private /tmp", "max procs 64 (" + procBound() + ")"} {
		if !strings.Contains(got, want) {
			t.Errorf("Describe = %q, want %q in it", got, want)
		}
	}
}

// A user other than root gets the same sandbox: the launcher keeps the
// capabilities it needs across its exec (ambient), and the process bound
// is RLIMIT_NPROC where no pids cgroup is writable. Run as root, the test
// runs the escape tests again as nobody.
func TestAsAnotherUser(t *testing.T) {
	if os.Getuid() != 0 || os.Getenv(helperEnv) != "" {
		t.Skip("runs the tests as nobody: needs root")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv is not installed")
	}
	available(t, backendNative)
	// Not t.TempDir: nobody must reach it, and its parent is root's 0700.
	tmp, err := os.MkdirTemp("", "sandbox-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", os.Args[0], "-test.v",
		"-test.run", "^(TestWritesOnlyInWorkspaceAndTmp|TestHomeSecretsUnreadable|TestForkBombBounded|TestCancelLeavesNothing)$/^"+regexp.QuoteMeta(backendNative))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + tmp, "TMPDIR=" + tmp}
	out, err := cmd.CombinedOutput()
	if strings.HasPrefix(string(out), "setpriv: ") {
		t.Skipf("nobody cannot run the test binary here: %s", out)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestForkBombBounded/"+backendNative) {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "SKIP") {
		t.Errorf("as nobody, a test was skipped:\n%s", out)
	}
}

// A home secret inside the workspace (the workspace is the home folder)
// is neither readable nor writable.
func TestHomeSecretsUnwritable(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			home := t.TempDir()
			if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
				t.Fatal(err)
			}
			netrc := filepath.Join(home, ".netrc")
			if err := os.WriteFile(netrc, []byte("machine x password s3cret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			out, _, _ := sandboxed(t, b, Policy{Workspace: home}, testEnv(home),
				`echo key >> "$HOME/.ssh/authorized_keys"; echo more >> "$HOME/.netrc"; cat "$HOME/.netrc"; echo ok > "$HOME/fine"`)
			if strings.Contains(out, "s3cret") {
				t.Errorf("the program read ~/.netrc: %q", out)
			}
			if b, _ := os.ReadFile(netrc); string(b) != "machine x password s3cret\n" {
				t.Errorf("~/.netrc was changed: %q", b)
			}
			if _, err := os.Stat(filepath.Join(home, ".ssh", "authorized_keys")); err == nil {
				t.Error("~/.ssh/authorized_keys was written")
			}
			if b, _ := os.ReadFile(filepath.Join(home, "fine")); string(b) != "ok\n" {
				t.Errorf("the workspace itself was not writable: %q", b)
			}
		})
	}
}

// The account's own home folder is among those whose secrets are hidden
// however HOME is set: a fake HOME does not uncover the real ~/.ssh.
func TestHomesIgnoreAFakeHOME(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		t.Skip("no home folder in the user database:", err)
	}
	fake := t.TempDir()
	t.Setenv("HOME", fake)
	hs := homes(fake)
	if !slices.Contains(hs, filepath.Clean(u.HomeDir)) {
		t.Errorf("homes(%s) = %v, without the account's %s", fake, hs, u.HomeDir)
	}
}

// A workspace reached through a symlink (a home folder that is a link,
// --workspace ./link) is as writable as the folder it names, by relative
// path and by the path given.
func TestWorkspaceThroughSymlink(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			real := t.TempDir()
			link := filepath.Join(t.TempDir(), "ws")
			if err := os.Symlink(real, link); err != nil {
				t.Fatal(err)
			}
			out, errOut, err := sandboxed(t, b, Policy{Workspace: link}, testEnv(t.TempDir()),
				`echo one > a.txt && echo two > "`+link+`/b.txt" && cat a.txt b.txt`)
			if err != nil || out != "one\ntwo\n" {
				t.Errorf("stdout %q, stderr %q, err %v", out, errOut, err)
			}
			for _, f := range []string{"a.txt", "b.txt"} {
				if _, err := os.Stat(filepath.Join(real, f)); err != nil {
					t.Errorf("%s was not written in the workspace: %v", f, err)
				}
			}
		})
	}
}

// The run records (Policy.Hide) are neither readable nor writable inside
// the workspace that holds them, and a Hide folder that holds the
// workspace does not hide it.
func TestHiddenRecordsInsideWorkspace(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			ws := t.TempDir()
			records := filepath.Join(ws, ".fsd", "runs")
			if err := os.MkdirAll(filepath.Join(records, "r1"), 0o755); err != nil {
				t.Fatal(err)
			}
			journal := filepath.Join(records, "r1", "journal.jsonl")
			if err := os.WriteFile(journal, []byte("approved: no\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			out, _, _ := sandboxed(t, b, Policy{Workspace: ws, Hide: []string{records, filepath.Dir(ws)}}, testEnv(ws),
				`cat .fsd/runs/r1/journal.jsonl; echo forged > .fsd/runs/r1/journal.jsonl; echo ok > fine`)
			if strings.Contains(out, "approved") {
				t.Errorf("the program read the journal: %q", out)
			}
			if b, _ := os.ReadFile(journal); string(b) != "approved: no\n" {
				t.Errorf("the journal was changed: %q", b)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "fine")); string(b) != "ok\n" {
				t.Errorf("the workspace itself was not writable: %q", b)
			}
		})
	}
}
