package board

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// goroutineID is the running goroutine's number, from its stack header
// ("goroutine 7 [running]:").
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := bytes.Fields(buf)
	if len(f) < 2 {
		return ""
	}
	return string(f[1])
}

// F4: while tasks wait for a slot they run on the goroutines already
// there, and none outlives Run.
func TestTasksReuseGoroutines(t *testing.T) {
	for _, conc := range []int{1, 3} {
		t.Run(fmt.Sprint("concurrency=", conc), func(t *testing.T) {
			noLeak(t)
			b := newBoard(t, Options{Concurrency: conc})
			var specs []TaskSpec
			for i := range 40 {
				specs = append(specs, TaskSpec{ID: fmt.Sprint("t", i), Goal: "g"})
			}
			// A chain after them: each waits for the one before.
			for i := range 10 {
				s := TaskSpec{ID: fmt.Sprint("c", i), Goal: "g"}
				if i > 0 {
					s.Deps = []string{fmt.Sprint("c", i-1)}
				}
				specs = append(specs, s)
			}
			mustAdd(t, b, specs...)
			var mu sync.Mutex
			seen := map[string]int{}
			rep, err := b.Run(context.Background(), func(ctx context.Context, t *Task, deps []DepResult) (string, error) {
				mu.Lock()
				seen[goroutineID()]++
				mu.Unlock()
				return "ok", nil
			})
			if err != nil || rep.Status != StatusDrained {
				t.Fatalf("Run: %v, %s", err, rep.Status)
			}
			if len(seen) > conc {
				t.Errorf("50 tasks at concurrency %d ran on %d goroutines, want at most %d: %v", conc, len(seen), conc, seen)
			}
		})
	}
}
