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
	// ends are tasks whose runners deferred their wait for the disk
	// (Defer), in the order they returned; finishing is set while a
	// goroutine works through them.
	ends      []*ending
	finishing bool
}

// job is a task to run and its context, which holds the task's slot.
type job struct {
	n   *node
	ctx *slotContext
}

// idlePerSlot bounds the goroutines that wait idle, per concurrency slot.
// A task that waits only on the disk hands the wait to the board (Defer)
// and its goroutine takes the next task; one that cannot (a wait outside
// Defer) leaves its slot (Leave) and another starts on a new goroutine,
// and when the commit they wait for lands they all end at once. Keeping
// as many of them as such a burst holds lets the tasks after it start on
// them.
const idlePerSlot = 16

func newRunners(ctx context.Context, b *Board, runner Runner, concurrency int) *runners {
	limit := max(concurrency, 1) * idlePerSlot
	return &runners{b: b, ctx: ctx, runner: runner, jobs: make(chan job, limit), limit: limit}
}

// run executes n holding a slot of sem, on an idle goroutine or a new
// one.
func (r *runners) run(n *node, sem chan struct{}) {
	j := job{n, &slotContext{Context: r.ctx, s: slot{sem: sem, held: true, board: true}}}
	r.mu.Lock()
	if r.idle > 0 {
		r.idle--
		r.mu.Unlock()
		r.jobs <- j
		return
	}
	r.mu.Unlock()
	r.g.Go(func() error {
		r.loop(j)
		return nil
	})
}

func (r *runners) loop(j job) {
	reserveStack(0)
	for {
		if e := r.b.execute(j.ctx, j.n, r.runner); e != nil {
			r.finishLater(e)
		}
		r.mu.Lock()
		wait := !r.closed && r.idle < r.limit
		if wait {
			r.idle++
		}
		r.mu.Unlock()
		j.ctx.s.release()
		if !wait {
			return
		}
		next, ok := r.next()
		if !ok {
			return
		}
		j = next
	}
}

// finishLater queues a task whose runner deferred its wait for the disk
// and returned, for one goroutine that waits for each queued task in
// turn and records its outcome (finish), so that waiting tasks hold no
// goroutine of their own. Commits land in the order the journal was
// written, so the first task's wait covers most of those queued after
// it; the goroutine ends when the queue is empty, and wait waits for it.
//
// F8: a task that waits only for the disk holds no goroutine.
func (r *runners) finishLater(e *ending) {
	r.mu.Lock()
	r.ends = append(r.ends, e)
	start := !r.finishing
	r.finishing = true
	r.mu.Unlock()
	if start {
		r.g.Go(func() error {
			r.finishAll()
			return nil
		})
	}
}

func (r *runners) finishAll() {
	reserveStack(0) // finish emits the task's end, as deep as a task's record
	for {
		r.mu.Lock()
		if len(r.ends) == 0 {
			r.finishing = false
			r.mu.Unlock()
			return
		}
		e := r.ends[0]
		r.ends[0] = nil
		r.ends = r.ends[1:]
		r.mu.Unlock()
		r.b.finish(e)
	}
}

// taskStack is the stack a runner reserves when it starts: room for the
// deepest calls of a task's attempt, its events and its record (about
// 16 KiB in process: an event.Event is 488 bytes, copied into each sink's
// frame on the way to the record), so that
// a task does not grow the stack in the middle of them, where growing
// copies every frame above it. Growing it at the start, with one frame
// on the stack, copies almost nothing.
const taskStack = 24 << 10

// reserveStack grows the goroutine's stack to hold taskStack more bytes.
//
// F6: a task's own calls never grow its runner's stack.
//
//go:noinline
func reserveStack(i int) byte {
	var pad [taskStack]byte
	pad[i%taskStack] = 1
	return pad[(i+1)%taskStack]
}

// next waits for the next job with a quarter of a reserved stack in use:
// the garbage collector halves the stack of a goroutine that uses less
// than a quarter of it, and the task after the wait would grow it back.
//
//go:noinline
func (r *runners) next() (job, bool) {
	var pad [idleStack]byte
	pad[r.limit%idleStack] = 1
	j, ok := <-r.jobs
	if pad[(r.limit+1)%idleStack] != 0 {
		return job{}, false // never: keeps pad in the frame
	}
	return j, ok
}

// idleStack is what next holds on the stack while it waits: a quarter of
// the 32 KiB stack that taskStack grows a runner's to.
const idleStack = 8 << 10

// wait ends the idle goroutines once no task is left to hand them, and
// waits for every goroutine to end.
func (r *runners) wait() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	close(r.jobs)
	_ = r.g.Wait()
}
