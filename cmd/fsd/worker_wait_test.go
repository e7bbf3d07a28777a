package main

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/fsdrun/fsd/internal/syncbuf"
)

// workerProc starts `fsd worker` with args (and env), its stderr in a
// buffer; stop sends SIGTERM and returns its exit code.
func workerProc(t *testing.T, env []string, args ...string) (stderr *syncbuf.Buffer, stop func() int) {
	t.Helper()
	cmd, _, _ := fsdProc(append([]string{"worker", "--cache", t.TempDir()}, args...)...)
	cmd.Env = append(append(cmd.Env, "NO_COLOR=1"), env...)
	stderr = &syncbuf.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() { done <- exitCode(cmd.Wait()) }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return stderr, func() int {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case c := <-done:
			return c
		case <-time.After(time.Minute):
			t.Fatalf("worker did not stop on SIGTERM:\n%s", stderr.String())
			return -1
		}
	}
}

// waitFor waits until b holds want: a hang guard of two minutes, not a
// timing assertion.
func waitFor(t *testing.T, b *syncbuf.Buffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(b.String(), want); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %q in:\n%s", want, b.String())
		}
	}
}

// freeLoopbackPort is a loopback port nobody listened on a moment ago.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A deployment that starts everything together (compose, systemd) may
// start workers before their NATS server: a worker waits for it, saying
// so with the URL's credentials hidden, instead of exiting; once the
// server is up it serves, and a run completes. SIGTERM ends the wait
// (exit 0).
func TestWorkerWaitsForServer(t *testing.T) {
	t.Parallel()
	port := freeLoopbackPort(t)
	url := "nats://fsd:s3cret@127.0.0.1:" + strconv.Itoa(port)
	a, stopA := workerProc(t, nil, "--nats", url, "--name", "early")
	b, stopB := workerProc(t, nil, "--nats", url, "--name", "stopped-early")
	waiting := "waiting for NATS at nats://REDACTED@127.0.0.1:" + strconv.Itoa(port)
	waitFor(t, a, waiting)
	waitFor(t, b, waiting)
	if code := stopB(); code != exitOK {
		t.Errorf("a worker stopped while it waited: exit %d, want 0:\n%s", code, b.String())
	}

	natsServerWith(t, server.Options{Port: port, JetStream: true, Username: "fsd", Password: "s3cret"})
	waitFor(t, a, "worker ready")
	dir := t.TempDir()
	wf := sleeperWorkflow(t, dir, "")
	code, out, errs := fsd(t, "run", wf, "--nats", url, "--runs-dir", filepath.Join(dir, "runs"))
	if code != exitOK || strings.TrimSpace(out) != "slept s" {
		t.Errorf("run with a worker started before its server: exit %d, answer %q\n%s\nworker:\n%s", code, out, errs, a.String())
	}
	if code := stopA(); code != exitOK {
		t.Errorf("worker: exit %d", code)
	}
	for _, s := range []string{a.String(), b.String(), errs} {
		if strings.Contains(s, "s3cret") {
			t.Errorf("stderr shows the password:\n%s", s)
		}
	}
}

// NATS credentials need not be in the URL (where ps shows them): an nkey
// seed file, given with --nkey or $FSD_NATS_NKEY (and the URL with
// $FSD_NATS_URL), lets fsd run and fsd worker in; without it the server
// refuses them.
func TestNATSCredentialsFromFiles(t *testing.T) {
	t.Parallel()
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := user.PublicKey()
	seed, _ := user.Seed()
	dir := t.TempDir()
	seedFile := filepath.Join(dir, "fsd.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := natsServerWith(t, server.Options{JetStream: true, Nkeys: []*server.NkeyUser{{Nkey: pub}}})
	url := srv.ClientURL()

	w, stop := workerProc(t, []string{envNATSURL + "=" + url, envNATSNKey + "=" + seedFile}, "--name", "nkey")
	defer stop()
	waitFor(t, w, "worker ready")
	wf := sleeperWorkflow(t, dir, "")
	runs := filepath.Join(dir, "runs")
	code, out, errs := fsd(t, "run", wf, "--nats", url, "--nkey", seedFile, "--runs-dir", runs)
	if code != exitOK || strings.TrimSpace(out) != "slept s" {
		t.Errorf("run with --nkey: exit %d, answer %q\n%s\nworker:\n%s", code, out, errs, w.String())
	}
	code, _, errs = fsd(t, "run", wf, "--nats", url, "--runs-dir", runs)
	if code != exitProblems || !strings.Contains(errs, "Authorization Violation") {
		t.Errorf("run without the nkey: exit %d, stderr %q", code, errs)
	}
	if strings.Contains(w.String()+errs, string(seed)) {
		t.Error("the seed was printed")
	}
}
