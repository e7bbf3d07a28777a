package board

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"unsafe"
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

// F6: a task runs on a stack the runner reserved when it started and
// kept while it waited, so the task's own calls never grow it: a local's
// address, which moves when the stack is copied, stays put through a
// task's deep calls, on a runner's first task and on a later one after a
// collection ran while the runner waited.
func TestTasksDoNotGrowTheStack(t *testing.T) {
	noLeak(t)
	b := newBoard(t, Options{Concurrency: 2})
	mustAdd(t, b, TaskSpec{ID: "hold", Goal: "g"}, TaskSpec{ID: "first", Goal: "g"})
	later := make(chan struct{})
	done := make(chan struct{})
	var mu sync.Mutex
	moved := map[string]bool{}
	ranOn := map[string]string{}
	rep, err := b.Run(context.Background(), func(ctx context.Context, task *Task, deps []DepResult) (string, error) {
		var local byte
		at := addressOf(&local)
		deepCalls(taskDepth)
		mu.Lock()
		moved[task.ID] = addressOf(&local) != at
		ranOn[task.ID] = goroutineID()
		mu.Unlock()
		switch task.ID {
		case "hold": // keeps the run going until "later" is done
			select {
			case <-later:
			case <-ctx.Done():
			}
		case "first":
			go func() {
				defer close(done)
				// Once this task's runner waits for the next, collect (the
				// collector shrinks the stacks of idle goroutines that use
				// little of them), then give it the next task.
				if !waitParked("board.(*runners).next") {
					t.Error("the runner never waited for a next task")
				}
				runtime.GC()
				runtime.GC()
				if _, err := b.AddAll([]TaskSpec{{ID: "later", Goal: "g"}}); err != nil {
					t.Error(err)
				}
			}()
		case "later":
			close(later)
		}
		return "ok", nil
	})
	<-done
	if err != nil || rep.Status != StatusDrained {
		t.Fatalf("Run: %v, %s", err, rep.Status)
	}
	if ranOn["later"] != ranOn["first"] {
		t.Fatalf("later ran on goroutine %s, first on %s: the test needs the same one", ranOn["later"], ranOn["first"])
	}
	for _, id := range []string{"first", "later"} {
		if moved[id] {
			t.Errorf("task %s grew its goroutine's stack", id)
		}
	}
}

// taskDepth is how deep deepCalls goes: about 19 KiB of frames, more
// than a new goroutine's stack holds or half a reserved one (what the
// collector would shrink an idle runner's to), and less than a reserved
// one's room.
const taskDepth = 64

// deepCalls stands for a task's deep calls: n frames of about 300 bytes.
//
//go:noinline
func deepCalls(n int) byte {
	var pad [256]byte
	pad[n%len(pad)] = byte(n)
	if n == 0 {
		return pad[0]
	}
	return deepCalls(n-1) + pad[(n+1)%len(pad)]
}

// addressOf is where p points, as a number that a stack copy does not
// adjust (a pointer held across the copy is adjusted, the number is not).
//
//go:noinline
func addressOf(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }

// waitParked reports whether some goroutine comes to wait in the function
// named fn, looking at every goroutine's stack a bounded number of times.
func waitParked(fn string) bool {
	buf := make([]byte, 1<<20)
	for range 10000 {
		if bytes.Contains(buf[:runtime.Stack(buf, true)], []byte(fn+"(")) {
			return true
		}
		runtime.Gosched()
	}
	return false
}
