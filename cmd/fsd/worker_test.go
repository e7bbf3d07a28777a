package main

import (
	"strings"
	"testing"
)

// fsd worker refuses bad flags with one usage line before doing
// anything (a server it cannot reach yet it waits for:
// TestWorkerWaitsForServer); fsd run, a server it cannot reach with one
// problem line.
func TestWorkerFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no nats", []string{"worker"}, exitUsage, "needs --nats URL"},
		{"zero concurrency", []string{"worker", "--nats", "nats://127.0.0.1:1", "--concurrency", "0"}, exitUsage, "--concurrency: 0"},
		{"short ack wait", []string{"worker", "--nats", "nats://127.0.0.1:1", "--ack-wait", "1ms"}, exitUsage, "--ack-wait: 1ms is too short"},
		{"bad agents", []string{"worker", "--nats", "nats://127.0.0.1:1", "--agents", "a b"}, exitUsage, "--agents"},
		{"args", []string{"worker", "extra"}, exitUsage, ""},
		{"no run server", []string{"run", "../../examples/pipeline.workflow.yaml", "--nats", "nats://127.0.0.1:1", "--runs-dir", t.TempDir()}, exitProblems, "nats nats://127.0.0.1:1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := fsd(t, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Errorf("fsd %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, errs, tc.code, tc.want)
			}
			if strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("stderr is not one line: %q", errs)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"nats://localhost:4222":                        "nats://localhost:4222",
		"nats://user:secret@h1:4222,tls://tok@h2:4222": "nats://REDACTED@h1:4222,tls://REDACTED@h2:4222",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
