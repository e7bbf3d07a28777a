package board

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// A task parked while it waits for a person gives its slot back: with
// concurrency 1, the other tasks run to completion meanwhile, and the
// parked one finishes after it takes a slot again.
func TestParkFreesTheSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBoard(t, Options{Concurrency: 1})
		mustAdd(t, b, TaskSpec{ID: "waits", Goal: "g"})
		mustAdd(t, b, TaskSpec{ID: "b", Goal: "g"})
		mustAdd(t, b, TaskSpec{ID: "c", Goal: "g"})
		answer := make(chan struct{})
		var running, maxRunning atomic.Int64
		enter := func() {
			n := running.Add(1)
			for {
				m := maxRunning.Load()
				if n <= m || maxRunning.CompareAndSwap(m, n) {
					break
				}
			}
		}
		var others atomic.Int64
		done := make(chan Report)
		go func() {
			rep, err := b.Run(context.Background(), func(ctx context.Context, task *Task, _ []DepResult) (string, error) {
				enter()
				defer running.Add(-1)
				if task.ID != "waits" {
					others.Add(1)
					return "ok", nil
				}
				running.Add(-1) // parked: not running
				unpark := Park(ctx)
				<-answer
				if err := unpark(); err != nil {
					return "", err
				}
				enter()
				return "approved", nil
			})
			if err != nil {
				t.Errorf("Run: %v", err)
			}
			done <- rep
		}()
		synctest.Wait()
		if got := others.Load(); got != 2 {
			t.Fatalf("tasks done while one waits parked = %d, want 2 (the slot was not given back)", got)
		}
		close(answer)
		rep := <-done
		if rep.Status != StatusDrained {
			t.Fatalf("Run = %s", rep.Status)
		}
		if m := maxRunning.Load(); m > 1 {
			t.Errorf("%d tasks ran at once with concurrency 1", m)
		}
	})
}

// Park outside a board does nothing.
func TestParkOutsideBoard(t *testing.T) {
	if err := Park(context.Background())(); err != nil {
		t.Fatal(err)
	}
}
