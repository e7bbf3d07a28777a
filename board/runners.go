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
// already there; at most limit goroutines wait idle, and none outlives
// Run (close, then the group's Wait).
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

func newRunners(ctx context.Context, b *Board, runner Runner, limit int) *runners {
	limit = max(limit, 1)
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
