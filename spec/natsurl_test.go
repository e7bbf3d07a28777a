package spec

import (
	"strings"
	"testing"
)

// TestNATSURLProblem: what fsd run, fsd worker and fsd validate say about
// a NATS URL list before anything dials it. The client takes any scheme
// (and waits for a web server's NATS greeting) and reports a port out of
// range only when dialling; a problem never shows a URL's credentials.
func TestNATSURLProblem(t *testing.T) {
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
		bad, problem := NATSURLProblem(tc.list)
		if bad != tc.bad || problem != tc.want {
			t.Errorf("NATSURLProblem(%q) = %q, %q; want %q, %q", tc.list, bad, problem, tc.bad, tc.want)
		}
		if strings.Contains(problem, "s3cret") {
			t.Errorf("NATSURLProblem(%q) shows the password: %q", tc.list, problem)
		}
	}
}
