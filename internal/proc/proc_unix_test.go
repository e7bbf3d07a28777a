//go:build unix

package proc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/fsdrun/fsd/internal/proctest"
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
			cmd := Command(ctx, Program{Argv: []string{"sh", "-c", tt.script}, Root: t.TempDir()})
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
			err := <-done
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
	cmd := Command(context.Background(), Program{Argv: []string{"sh", "-c", `i=0; while [ $i -lt 2000 ]; do echo noise >&2; i=$((i+1)); done; echo why it failed >&2; exit 3`}, Root: t.TempDir()})
	tail := NewTail(64)
	err := Run(cmd, &bytes.Buffer{}, tail)
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
