package board

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// F8: runners that deferred their wait for the disk return at once, so
// every task runs on the one goroutine of a concurrency-1 board while the
// disk holds all their commits; none counts as done, runs what it asked
// to follow the commit (Then) or lets its dependent start before its wait
// returns.
func TestDeferredWaitsHoldNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBoard(t, Options{Concurrency: 1})
		var ids []string
		for i := range 5 {
			ids = append(ids, fmt.Sprint("t", i))
			mustAdd(t, b, TaskSpec{ID: ids[i], Goal: "g"})
		}
		mustAdd(t, b, TaskSpec{ID: "after", Goal: "g", Deps: ids})
		disk := make(chan struct{})
		var mu sync.Mutex
		ranOn := map[string]bool{}
		var then []string
		var returned atomic.Int64
		done := make(chan Report)
		go func() {
			rep, _ := b.Run(context.Background(), func(ctx context.Context, task *Task, deps []DepResult) (string, error) {
				mu.Lock()
				ranOn[goroutineID()] = true
				mu.Unlock()
				if task.ID != "after" {
					if !Defer(ctx, func() error { <-disk; return nil }) {
						<-disk
					}
					Then(ctx, func() {
						mu.Lock()
						then = append(then, task.ID)
						mu.Unlock()
					})
				}
				returned.Add(1)
				return "done", nil
			})
			done <- rep
		}()
		synctest.Wait()
		if got := returned.Load(); got != 5 {
			t.Errorf("%d runners returned while the disk held their commits, want all 5", got)
		}
		mu.Lock()
		if len(ranOn) != 1 {
			t.Errorf("5 tasks at concurrency 1 ran on %d goroutines, want 1", len(ranOn))
		}
		if len(then) > 0 {
			t.Errorf("Then ran before the commit for %v", then)
		}
		mu.Unlock()
		for _, task := range b.Tasks() {
			if task.Status != Running && task.ID != "after" || task.ID == "after" && task.Status != Pending {
				t.Errorf("task %s is %s while the disk holds its commit", task.ID, task.Status)
			}
		}
		close(disk)
		rep := <-done
		if rep.Status != StatusDrained {
			t.Fatalf("Run = %s", rep.Status)
		}
		for _, task := range rep.Tasks {
			if task.Status != Completed || task.Result != "done" {
				t.Errorf("task %s: %s %q", task.ID, task.Status, task.Result)
			}
		}
		slices.Sort(then)
		if !slices.Equal(then, ids) {
			t.Errorf("Then ran for %v, want %v", then, ids)
		}
	})
}

// A deferred wait that fails fails its task (its dependents stay
// pending) and skips what was to follow it; outside a board's runner
// nothing is deferred and Then runs at once.
func TestDeferredWaitFails(t *testing.T) {
	noLeak(t)
	b := newBoard(t, Options{Concurrency: 2})
	mustAdd(t, b, TaskSpec{ID: "a", Goal: "g"}, TaskSpec{ID: "b", Goal: "g", Deps: []string{"a"}})
	var followed atomic.Bool
	rep, err := b.Run(context.Background(), func(ctx context.Context, task *Task, deps []DepResult) (string, error) {
		if !Defer(ctx, func() error { return errors.New("disk full") }) {
			return "", errors.New("a board runner could not defer")
		}
		Then(ctx, func() { followed.Store(true) })
		return "done", nil
	})
	if err != nil || rep.Status != StatusBlocked {
		t.Fatalf("Run = %s, %v; want %s", rep.Status, err, StatusBlocked)
	}
	if a := rep.Tasks[0]; a.Status != Failed || a.Error != "disk full" || a.Result != "" {
		t.Errorf("task a: %s %q %q, want failed by the wait", a.Status, a.Error, a.Result)
	}
	if !slices.Equal(rep.Stranded, []string{"b"}) {
		t.Errorf("stranded %v, want [b]", rep.Stranded)
	}
	if followed.Load() {
		t.Error("Then ran after a failed wait")
	}

	slots := NewSlots(1)
	ctx, release, _ := slots.Take(context.Background())
	defer release()
	for _, ctx := range []context.Context{context.Background(), ctx} {
		if Defer(ctx, func() error { return nil }) {
			t.Error("Defer took a wait outside a board's runner")
		}
		ran := false
		Then(ctx, func() { ran = true })
		if !ran {
			t.Error("Then did not run at once outside a board's runner")
		}
	}
}

// TestDeferredPanicFailsTask (F8): a deferred wait or Then that panics
// fails its task as a runner's panic does; the run goes on, and the
// panic does not end the process from the goroutine that finishes
// deferred tasks.
func TestDeferredPanicFailsTask(t *testing.T) {
	noLeak(t)
	b := newBoard(t, Options{Concurrency: 2})
	mustAdd(t, b, TaskSpec{ID: "wait", Goal: "g"}, TaskSpec{ID: "then", Goal: "g"}, TaskSpec{ID: "fine", Goal: "g"})
	rep, err := b.Run(context.Background(), func(ctx context.Context, task *Task, deps []DepResult) (string, error) {
		switch task.ID {
		case "wait":
			Defer(ctx, func() error { panic("the wait broke") })
		case "then":
			Defer(ctx, func() error { return nil })
			Then(ctx, func() { panic("the follow-up broke") })
		default:
			Defer(ctx, func() error { return nil })
		}
		return "done", nil
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := map[string]string{"wait": "panic: the wait broke", "then": "panic: the follow-up broke"}
	for _, task := range rep.Tasks {
		if msg, ok := want[task.ID]; ok {
			if task.Status != Failed || task.Error != msg {
				t.Errorf("task %s: %s %q, want failed with %q", task.ID, task.Status, task.Error, msg)
			}
		} else if task.Status != Completed {
			t.Errorf("task %s: %s %q, want completed", task.ID, task.Status, task.Error)
		}
	}
}
