package board

import (
	"context"
	"sync"

	"golang.org/x/sync/errgroup"
)

// runners run a board's tasks on goroutines that live for the Run: a
// goroutine that finished a task takes the next one instead of ending, so
// a task starts on a stack already grown by the ones before it. A new
// goroutine starts with a small stack and grows it, copying it each time,
// as the deep calls of a task's attempt and its record need; over
// thousands of short tasks that copying was a measurable share of a run's
// CPU.
//
// F4: a goroutine offers itself for the next task before it gives its
// slot back, so while tasks wait for slots they run on the goroutines
// already there; at most idlePerSlot per slot wait idle, and none
// outlives Run (wait).
type runners struct {
	b      *Board
	ctx    context.Context
	runner Runner
	g      errgroup.Group
	// jobs hands a task to an idle goroutine; it has room for every idle
	// one, so a hand-off never blocks.
	jobs chan job

	mu     sync.Mutex
	idle   int // goroutines that offered themselves and have no job yet
	limit  int
	closed bool
}

type job struct {
	n *node
	s *slot
}

// idlePerSlot bounds the goroutines that wait idle, per concurrency slot.
// A task that waits only on the disk leaves its slot (Leave) and another
// starts on a new goroutine; when the commit they wait for lands they all
// end at once. Keeping as many of them as such a burst holds (a 1,000-task
// fan-out parks tens at a time) lets the tasks after it start on them.
const idlePerSlot = 16

func newRunners(ctx context.Context, b *Board, runner Runner, concurrency int) *runners {
	limit := max(concurrency, 1) * idlePerSlot
	return &runners{b: b, ctx: ctx, runner: runner, jobs: make(chan job, limit), limit: limit}
}

// run executes n holding slot s, on an idle goroutine or a new one.
func (r *runners) run(n *node, s *slot) {
	r.mu.Lock()
	if r.idle > 0 {
		r.idle--
		r.mu.Unlock()
		r.jobs <- job{n, s}
		return
	}
	r.mu.Unlock()
	r.g.Go(func() error {
		r.loop(job{n, s})
		return nil
	})
}

func (r *runners) loop(j job) {
	for {
		r.b.execute(context.WithValue(r.ctx, slotKey{}, j.s), j.n, r.runner)
		r.mu.Lock()
		wait := !r.closed && r.idle < r.limit
		if wait {
			r.idle++
		}
		r.mu.Unlock()
		j.s.release()
		if !wait {
			return
		}
		next, ok := <-r.jobs
		if !ok {
			return
		}
		j = next
	}
}

// wait ends the idle goroutines once no task is left to hand them, and
// waits for every goroutine to end.
func (r *runners) wait() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	close(r.jobs)
	_ = r.g.Wait()
}
