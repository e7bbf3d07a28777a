//go:build unix

package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/fsdrun/fsd/internal/proctest"
	"github.com/fsdrun/fsd/internal/sandbox"
)

// firstLine sends the first line written to it, then keeps nothing.
type firstLine struct {
	mu   sync.Mutex
	buf  []byte
	sent bool
	c    chan string
}

func (w *firstLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.sent {
		w.buf = append(w.buf, p...)
		if l, _, ok := bytes.Cut(w.buf, []byte("\n")); ok {
			w.sent = true
			w.c <- string(l)
		}
	}
	return len(p), nil
}

// What a program leaves in the background dies with it when it exits and
// when its call is cancelled.
func TestGroupDiesWithTheCall(t *testing.T) {
	for _, tt := range []struct {
		name   string
		script string // prints its background child's pid first
		cancel bool
	}{
		{"exited", `sleep 30 & echo $!`, false},
		{"cancelled", `sleep 30 & echo $!; wait`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cmd, err := Command(ctx, Program{Argv: []string{"sh", "-c", tt.script}, Root: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			out := &firstLine{c: make(chan string, 1)}
			done := make(chan error, 1)
			go func() { done <- Run(cmd, out, &bytes.Buffer{}) }()
			var pid int
			select {
			case l := <-out.c:
				var err error
				if pid, err = strconv.Atoi(l); err != nil {
					t.Fatalf("first line %q", l)
				}
			case err := <-done:
				t.Fatalf("ended before printing: %v", err)
			}
			if tt.cancel {
				cancel()
			}
			err = <-done
			if tt.cancel && err == nil {
				t.Error("a cancelled program reported success")
			}
			if !tt.cancel && err != nil {
				t.Errorf("Run: %v", err)
			}
			if !proctest.Gone(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("the background child %d outlived the call", pid)
			}
		})
	}
}

// A program's stderr end reaches Run's writer, however much it printed.
func TestRunKeepsStderrTail(t *testing.T) {
	cmd, err := Command(context.Background(), Program{Argv: []string{"sh", "-c", `i=0; while [ $i -lt 2000 ]; do echo noise >&2; i=$((i+1)); done; echo why it failed >&2; exit 3`}, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tail := NewTail(64)
	err = Run(cmd, &bytes.Buffer{}, tail)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("Run: %v", err)
	}
	if got := tail.String(); len(got) > 64 || !strings.HasSuffix(got, "noise\nwhy it failed\n") {
		t.Errorf("tail %q", got)
	}
}

func TestAlive(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Error("this process is not alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if Alive(cmd.Process.Pid) {
		t.Errorf("reaped process %d is alive", cmd.Process.Pid)
	}
	for _, pid := range []int{0, -1} {
		if Alive(pid) {
			t.Errorf("pid %d is alive", pid)
		}
	}
}

// Another user's process (signal 0 refused) is alive: its run is not ours
// to take over.
func TestAliveAfter(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, true},
		{syscall.EPERM, true},
		{syscall.ESRCH, false},
	} {
		if got := aliveAfter(tt.err); got != tt.want {
			t.Errorf("aliveAfter(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// A program whose sandbox cannot be had does not start: Command fails and
// nothing runs. One whose sandbox can is wrapped, and what the sandbox
// holds is released once Run has waited for it.
func TestCommandSandbox(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	argv := []string{"sh", "-c", "touch " + marker}
	pol := &sandbox.Policy{Workspace: dir}

	fail := func(*exec.Cmd, sandbox.Policy) (func(), error) {
		return nil, fmt.Errorf("%w: not on this machine", sandbox.ErrUnavailable)
	}
	cmd, err := Command(context.Background(), Program{Argv: argv, Root: dir, Sandbox: pol, Wrap: fail})
	if !errors.Is(err, sandbox.ErrUnavailable) || cmd != nil {
		t.Fatalf("Command = %v, %v; want no command and ErrUnavailable", cmd, err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the program ran: %v", err)
	}

	var got sandbox.Policy
	cleaned := 0
	pass := func(c *exec.Cmd, p sandbox.Policy) (func(), error) {
		got = p
		return func() { cleaned++ }, nil
	}
	cmd, err = Command(context.Background(), Program{Argv: argv, Root: dir, Sandbox: pol, Wrap: pass})
	if err != nil {
		t.Fatal(err)
	}
	if got.Workspace != dir {
		t.Errorf("wrapped with %+v, want the program's policy", got)
	}
	if err := Run(cmd, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	cmd.Cleanup()
	if cleaned != 1 {
		t.Errorf("cleaned up %d times, want once", cleaned)
	}

	// No policy: nothing wraps it (sandbox: off).
	cmd, err = Command(context.Background(), Program{Argv: argv, Root: dir, Wrap: fail})
	if err != nil {
		t.Fatalf("unconfined: %v", err)
	}
	if err := Run(cmd, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
}
