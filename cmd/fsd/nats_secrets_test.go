package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// A NATS password is a secret like a model key: a connection refused for
// a wrong one is one line on stderr that does not show it (the run record
// side: TestResumeAsksForNATSCredentials).
func TestNATSPasswordNotPrinted(t *testing.T) {
	const pw = "pw-9f3c-never-shown"
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true, Username: "fsd", Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		t.Fatal("embedded NATS server did not start")
	}
	t.Cleanup(s.Shutdown)
	port := s.Addr().(*net.TCPAddr).Port
	wrong := fmt.Sprintf("nats://fsd:%s-wrong@127.0.0.1:%d", pw, port)

	dir := t.TempDir()
	wf := sleeperWorkflow(t, dir)
	runs := filepath.Join(dir, "runs")

	for _, args := range [][]string{
		{"run", wf, "--nats", wrong, "--runs-dir", runs},
		{"worker", "--nats", wrong, "--cache", t.TempDir()},
	} {
		code, _, errs := fsd(t, args...)
		if code != exitProblems || !strings.Contains(errs, "Authorization Violation") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("fsd %s with a wrong password: exit %d, stderr %q; want exit 1 and one line", args[0], code, errs)
		}
		if strings.Contains(errs, pw) {
			t.Errorf("fsd %s printed the password: %q", args[0], errs)
		}
	}
}
