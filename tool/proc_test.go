package tool

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/fsdrun/fsd/internal/proctest"
)

// TestMain lets the test binary act as a process that runs a tool, so a
// test can kill -9 "fsd" and watch what happens to the tool.
func TestMain(m *testing.M) {
	if dir := os.Getenv("FSD_TOOL_TEST_PARENT"); dir != "" {
		// Run a command tool that writes its pid and sleeps; the test
		// kills us while it sleeps.
		tl, err := Compile(command("sh", "-c", `echo $$ > pid; exec sleep 30`), dir, unconfined)
		if err != nil {
			os.Exit(3)
		}
		tl.Call(context.Background(), nil, nil)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// unconfined runs a tool outside the sandbox, for the tests of what
// process groups and Pdeathsig do on their own: a sandboxed program's
// pids are its PID namespace's, which this process cannot look up (the
// sandbox's own tests kill its calls).
var unconfined = WithSandbox(nil)

// A tool that leaves a child in the background is done when it exits;
// the child dies with the call instead of living on.
func TestBackgroundChildDiesWithTheCall(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	dir := t.TempDir()
	tl, err := Compile(command("sh", "-c", `sleep 30 & echo $! > child; echo started`), dir, unconfined)
	if err != nil {
		t.Fatal(err)
	}
	got := tl.Call(context.Background(), nil, nil)
	if got != (Result{Text: "started\n"}) {
		t.Fatalf("got %+v", got)
	}
	if pid := proctest.ReadPid(t, filepath.Join(dir, "child")); !proctest.Gone(pid) {
		t.Errorf("the background child %d outlived the call", pid)
	}
}

// kill -9 of the process running a tool kills the tool too (Pdeathsig):
// nothing finishes a side effect behind a dead fsd's back.
func TestToolDiesWithFsd(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux's")
	}
	dir := t.TempDir()
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), "FSD_TOOL_TEST_PARENT="+dir)
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	pid := proctest.ReadPid(t, filepath.Join(dir, "pid"))
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	if !proctest.Gone(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("tool process %d outlived its killed parent", pid)
	}
}

// Every command gets FSD_RUN_ID and FSD_CALL_ID from its call.
func TestCallIDsInEnvironment(t *testing.T) {
	tl, err := Compile(command("sh", "-c", `printf '%s|%s' "$FSD_RUN_ID" "$FSD_CALL_ID"`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithCallIDs(context.Background(), CallIDs{Run: "r1", Call: "host/s2/c1"})
	if got := tl.Call(ctx, nil, nil); got != (Result{Text: "r1|host/s2/c1"}) {
		t.Errorf("got %+v", got)
	}
	if got := tl.Call(context.Background(), nil, nil); got != (Result{Text: "|"}) {
		t.Errorf("without ids: got %+v", got)
	}
}
