package natsboard

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/golden"
	"github.com/fsdrun/fsd/spec"
)

// TestURLProblem: what fsd run, fsd worker and fsd validate say about
// a NATS URL list before anything dials it. The client takes any scheme
// (and waits for a web server's NATS greeting) and reports a port out of
// range only when dialling; a problem never shows a URL's credentials.
func TestURLProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ list, bad, want string }{
		{"nats://localhost:4222", "", ""},
		{"localhost:4222", "", ""},
		{"localhost", "", ""},
		{"nats://a:4222, tls://b:4222,ws://c,wss://d:443", "", ""},
		{"nats://fsd:s3cret@localhost:4222", "", ""},
		{"http://localhost:4222", "http://localhost:4222", "want nats://HOST:PORT (or tls://, ws://, wss://), not http://"},
		{"nats://a:4222,http://fsd:s3cret@web", "http://fsd:s3cret@web", "want nats://HOST:PORT (or tls://, ws://, wss://), not http://"},
		{"nats://", "nats://", "no host"},
		{"  ", "", "no host"},
		{"nats://a:4222,", "", "no host"},
		{"nats://localhost:99999", "nats://localhost:99999", "port 99999 is out of range (1-65535)"},
		{"nats://localhost:0", "nats://localhost:0", "port 0 is out of range (1-65535)"},
		{"nats://localhost:bad", "nats://localhost:bad", `invalid port ":bad" after host`},
	} {
		bad, problem := URLProblem(tc.list)
		if bad != tc.bad || problem != tc.want {
			t.Errorf("URLProblem(%q) = %q, %q; want %q, %q", tc.list, bad, problem, tc.bad, tc.want)
		}
		if strings.Contains(problem, "s3cret") {
			t.Errorf("URLProblem(%q) shows the password: %q", tc.list, problem)
		}
	}
}

// TestCheckWorkflow: a board.nats that fsd run would refuse is reported by
// fsd validate (spec's loading with this check) at its line, naming the
// list element by its place and never showing its password.
func TestCheckWorkflow(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"bad-board-nats", "bad-board-nats-port"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", "bad", name+".workflow.yaml")
			var b strings.Builder
			for _, d := range spec.ValidatePaths([]string{path}, false, CheckWorkflow) {
				b.WriteString(d.String() + "\n")
			}
			if strings.Contains(b.String(), "s3cret") {
				t.Errorf("the diagnostic shows the password: %s", b.String())
			}
			golden.CheckString(t, filepath.Join("testdata", "bad", name+".golden"), b.String())
			if d := spec.ValidatePaths([]string{path}, false); len(d) != 0 {
				t.Errorf("spec alone reports %v: board.nats is the transport's to check", d)
			}
		})
	}
}

// A NATS URL's password or token is what a run masks; a user name and a
// URL without credentials give nothing.
func TestURLSecrets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ list, want string }{
		{"nats://127.0.0.1:4222", "[]"},
		{"nats://alice:s3cret-pass@h:4222", "[s3cret-pass]"},
		{"nats://t0ken-value@h1:4222, tls://bob:p%40ss-word@h2", "[t0ken-value p%40ss-word p@ss-word]"},
	} {
		if got := fmt.Sprint(URLSecrets(tc.list)); got != tc.want {
			t.Errorf("URLSecrets(%q) = %s, want %s", tc.list, got, tc.want)
		}
	}
}
