//go:build unix

package workspace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/fsdrun/fsd/internal/proctest"
	"github.com/fsdrun/fsd/tool"
)

func TestBash(t *testing.T) {
	f := newFixture(t)
	t.Setenv("FSD_WORKSPACE_TEST_SECRET", "hunter2")
	runCases(t, f, []toolCase{
		{"runs in the workspace", Bash, `{"command":"pwd; cat notes.txt | wc -l"}`, false, []string{"$WS\n", "4\n"}, nil},
		{"stderr with stdout", Bash, `{"command":"echo out; echo err >&2"}`, false, []string{"out\nerr\n"}, nil},
		{"a failure's status and output", Bash, `{"command":"echo why >&2; exit 3"}`, true, []string{"exited with status 3", "output:\nwhy\n"}, nil},
		{"timeout in ms", Bash, `{"command":"sleep 5","timeout":100}`, true, []string{"timed out after 100ms"}, nil},
		{"fsd's environment stays out", Bash, `{"command":"env"}`, false, []string{"PATH="}, []string{"hunter2"}},
		{"empty command", Bash, `{"command":""}`, true, []string{"command is empty"}, nil},
		{"timeout over the cap", Bash, `{"command":"true","timeout":600001}`, true, []string{"timeout"}, nil},
	})
}

// What a command leaves in the background dies with the call. It runs
// unconfined: in a sandbox $! is its PID namespace's pid, which this
// process cannot look up (the sandbox's own tests kill its calls).
func TestBashBackgroundDies(t *testing.T) {
	f := newFixture(t)
	tl, err := NewTool(Bash, f.ws, nil, tool.WithSandbox(nil))
	if err != nil {
		t.Fatal(err)
	}
	res := tl.Call(context.Background(), json.RawMessage(`{"command":"sleep 30 >/dev/null 2>&1 & echo $! > child.pid"}`))
	if res.IsError {
		t.Fatal(res.Text)
	}
	b, err := os.ReadFile(filepath.Join(f.dir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !proctest.Gone(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the background child %d outlived the call", pid)
	}
}

// Bash's output is masked and capped as a command tool's.
func TestBashOutputCapped(t *testing.T) {
	f := newFixture(t)
	tl, _ := NewTool(Bash, f.ws, nil, tool.WithMask(func(s string) string { return strings.ReplaceAll(s, "s3cr3t-value", "[REDACTED]") }))
	res := tl.Call(context.Background(), json.RawMessage(`{"command":"echo s3cr3t-value; head -c 2000000 /dev/zero | tr '\\0' x"}`))
	if !res.Truncated || len(res.Text) > tool.MaxOutputBytes+100 || strings.Contains(res.Text, "s3cr3t") || !strings.HasPrefix(res.Text, "[REDACTED]\n") {
		t.Errorf("Truncated %v, %d bytes, starting %q", res.Truncated, len(res.Text), res.Text[:min(len(res.Text), 40)])
	}
}
