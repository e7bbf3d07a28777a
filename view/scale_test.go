package view

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/event"
)

// The counts and running rows a frame reads are kept as events arrive;
// through every transition (added, started, waiting for approval and
// back, ended, started again by a retry of the run) they agree with the
// rows themselves.
func TestCountsFollowEveryTransition(t *testing.T) {
	b := NewBoard(&bytes.Buffer{}, nil)
	now := time.Now()
	for i := range 30 {
		b.Emit(event.Event{Type: event.TaskAdded, Task: fmt.Sprintf("t%d", i)})
	}
	for i := range 12 {
		b.Emit(event.Event{Type: event.TaskStarted, Task: fmt.Sprintf("t%d", i), Time: now})
	}
	b.Emit(event.Event{Type: event.ApprovalRequested, Task: "t0"})
	b.Emit(event.Event{Type: event.ApprovalRequested, Task: "t1"})
	b.Emit(event.Event{Type: event.ApprovalAnswered, Task: "t1"})
	b.Emit(event.Event{Type: event.TaskCompleted, Task: "t2", Time: now})
	b.Emit(event.Event{Type: event.TaskFailed, Task: "t3", Time: now})
	b.Emit(event.Event{Type: event.TaskCancelled, Task: "t4", Time: now})
	b.Emit(event.Event{Type: event.TaskStarted, Task: "t3", Time: now})
	b.Emit(event.Event{Type: event.TaskCompleted, Task: "late", Time: now}) // never added

	want := map[string]int{}
	running := 0
	for _, r := range b.rows {
		want[r.status]++
		if r.status == "running" {
			running++
		}
	}
	for s, n := range b.counts {
		if n != want[s] {
			t.Errorf("count of %s: %d, the rows say %d", s, n, want[s])
		}
	}
	if got := b.runningLocked(); got != running {
		t.Errorf("%d running, the rows say %d", got, running)
	}
	// 18 pending, t0 waiting, 9 running (t1 and t3 again among them), 2
	// completed, t4 cancelled: 31 rows, of which the frame draws every
	// running one and the most recent others up to 20.
	f := b.Frame()
	if !strings.Contains(f, "tasks 31: 18 pending, 9 running, 2 completed, 0 failed, 1 cancelled") {
		t.Errorf("frame:\n%s", f)
	}
	if n := strings.Count(f, " running "); n != 9 {
		t.Errorf("%d running rows drawn, want 9:\n%s", n, f)
	}
}

// BenchmarkFrame draws the live board of a run of n tasks with 4
// running: the cost of a frame must not grow with the board.
//
//	go test ./view -run '^$' -bench Frame
func BenchmarkFrame(b *testing.B) {
	for _, n := range []int{100, 10_000, 100_000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			v := NewBoard(&bytes.Buffer{}, nil)
			now := time.Now()
			for i := range n {
				v.Emit(event.Event{Type: event.TaskAdded, Task: fmt.Sprintf("t%d", i), Agent: "fan/worker"})
			}
			for i := range n / 2 {
				v.Emit(event.Event{Type: event.TaskStarted, Task: fmt.Sprintf("t%d", i), Time: now})
				if i < n/2-4 {
					v.Emit(event.Event{Type: event.TaskCompleted, Task: fmt.Sprintf("t%d", i), Time: now})
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				v.draw(true)
			}
		})
	}
}
