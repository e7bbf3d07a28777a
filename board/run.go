package board

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/fsdrun/fsd/event"
)

// Runner runs one task: for the engine, a worker generator. t is a
// snapshot (Attempts says which attempt this is); deps are the results of
// the task's dependencies, in the order the task lists them. A runner must
// return promptly once ctx is cancelled: that is how timeouts, cancelTask
// and Ctrl-C reach it.
type Runner func(ctx context.Context, t *Task, deps []DepResult) (string, error)

// The statuses of a finished Run.
const (
	// StatusDrained: every task that could run ran.
	StatusDrained = "drained"
	// StatusBlocked: some tasks stay pending because a dependency failed or
	// was cancelled; Report.Stranded lists them.
	StatusBlocked = "blocked"
	// StatusCancelled: the run's context was cancelled.
	StatusCancelled = "cancelled"
)

// Report is what a Run leaves: every task on the board, in the order
// added, and the ones stranded behind a failure.
type Report struct {
	Status   string   `json:"status"`
	Tasks    []Task   `json:"tasks"`
	Stranded []string `json:"stranded,omitempty"`
}

// Run runs every runnable task in dependency order, at most
// Options.Concurrency at once, and returns when nothing more can run. A
// task's failure is recorded on the task, not returned: the error is
// non-nil only when ctx was cancelled (ctx.Err()) or another Run is in
// progress. After a cancel, tasks that finished keep their results,
// interrupted ones are cancelled and the rest stay pending; no goroutine
// of the run outlives Run.
//
// D3: at most concurrency tasks run at once, each only after its deps
// completed.
func (b *Board) Run(ctx context.Context, runner Runner) (Report, error) {
	b.mu.Lock()
	if b.running {
		b.mu.Unlock()
		return Report{}, errf(CodeBoardRunning, "", "the board is already running")
	}
	b.running = true
	b.ready = b.ready[:0]
	for _, n := range b.order {
		if n.t.Status == Pending && n.waiting == 0 {
			b.ready = append(b.ready, n)
		}
	}
	b.mu.Unlock()

	// A slot is taken before a task's goroutine starts and given back
	// when it ends, or earlier when its runner only waits on the disk
	// (Leave).
	sem := make(chan struct{}, b.opts.Concurrency)
	pool := newRunners(ctx, b, runner, b.opts.Concurrency)
	head := 0
	for {
		b.mu.Lock()
		if ctx.Err() != nil {
			b.mu.Unlock()
			break
		}
		if head == len(b.ready) {
			// Reuse the queue's memory once it is drained.
			b.ready, head = b.ready[:0], 0
			if b.inflight == 0 {
				b.mu.Unlock()
				break
			}
			b.mu.Unlock()
			select {
			case <-b.wake:
			case <-ctx.Done():
			}
			continue
		}
		n := b.ready[head]
		b.ready[head] = nil
		head++
		b.inflight++
		b.mu.Unlock()
		// Wait for a slot; a worker that frees one has usually queued
		// its dependents already.
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			b.mu.Lock()
			b.inflight--
			b.mu.Unlock()
			continue
		}
		pool.run(n, sem)
	}
	pool.wait()

	b.mu.Lock()
	b.running = false
	b.ready, head = b.ready[:0], 0
	rep := Report{Tasks: make([]Task, len(b.order))}
	for i, n := range b.order {
		rep.Tasks[i] = n.t
		if n.t.Status == Pending {
			rep.Stranded = append(rep.Stranded, n.t.ID)
		}
	}
	b.mu.Unlock()
	var err error
	switch {
	case ctx.Err() != nil:
		rep.Status, err = StatusCancelled, ctx.Err()
		// Pending tasks after a cancel were not stranded by a failure; they
		// simply did not get their turn.
		rep.Stranded = nil
	case len(rep.Stranded) > 0:
		rep.Status = StatusBlocked
	default:
		rep.Status = StatusDrained
	}
	b.emit(event.Event{Type: event.BoardFinished, Status: rep.Status, Deps: rep.Stranded})
	return rep, err
}

// execute runs one task with its retries and records the outcome. When
// its runner deferred the wait for its answer to be durable (Defer), the
// outcome is recorded later, by finish, and execute returns the task's
// ending for runners to hand to the goroutine that waits.
//
// G1: the task's call ends here and its node keeps only the Task
// (status, result, times), so a board of 100,000 finished tasks holds
// their results and nothing of the runs that made them; the goroutine
// that ran it waits, holding nothing, for the next task (runners).
func (b *Board) execute(ctx *slotContext, n *node, runner Runner) *ending {
	b.mu.Lock()
	if n.t.Status != Pending || ctx.Err() != nil {
		// Cancelled while it waited for a slot, or the run was cancelled:
		// it never started.
		b.inflight--
		b.signal()
		b.mu.Unlock()
		return nil
	}
	tctx, cancel := context.WithCancelCause(ctx)
	n.cancel = cancel
	n.t.Status = Running
	n.t.Started = b.opts.Now()
	b.pending--
	deps := make([]DepResult, len(n.deps))
	for i, d := range n.deps {
		deps[i] = DepResult{TaskID: d.t.ID, Agent: d.t.Agent(), Result: d.t.Result, Output: d.t.Output}
	}
	snap := n.t
	b.mu.Unlock()
	b.emit(event.Event{Type: event.TaskStarted, Task: snap.ID, Agent: snap.Agent(), Goal: snap.Goal})

	var timeout time.Duration
	retries := 0
	if b.opts.Policy != nil {
		timeout, retries = b.opts.Policy(snap.Assignee)
	}
	s := &ctx.s
	e := &ctx.end
	*e = ending{n: n, ctx: tctx, cancel: cancel}
	for attempt := 1; ; attempt++ {
		e.attempts = attempt
		snap.Attempts = attempt
		if !s.acquire(tctx) {
			// An earlier attempt left its slot and the run ended while
			// this one waited for another.
			e.err = tctx.Err()
			break
		}
		s.takeEnds() // what a failed attempt deferred is not this one's
		e.result, e.out, e.err = attemptOnce(tctx, timeout, runner, snap, &e.task, deps)
		if e.err == nil || tctx.Err() != nil || attempt > retries {
			break
		}
		t := time.NewTimer(b.opts.Backoff(attempt))
		select {
		case <-t.C:
		case <-tctx.Done():
			t.Stop()
		}
		if tctx.Err() != nil {
			break
		}
	}
	if e.wait, e.then = s.takeEnds(); e.wait != nil && e.err == nil {
		return e
	}
	e.wait, e.then = nil, nil
	b.finish(e)
	return nil
}

// ending is a task whose attempts are over: their outcome, and what it
// waits for before it counts (Defer).
type ending struct {
	n        *node
	attempts int
	result   string
	out      json.RawMessage
	err      error
	wait     func() error    // Defer's
	then     func()          // Then's, after wait
	task     Task            // the copy of the task an attempt's runner is given
	ctx      context.Context // the task's, cancelled by cancel once it ends
	cancel   context.CancelCauseFunc
}

// finish records a task's outcome once what its runner deferred
// returned: a wait's error fails the task.
func (b *Board) finish(end *ending) {
	defer end.cancel(nil)
	if end.wait != nil {
		end.err = waitThen(end.wait, end.then)
		// The closures hold what the runner let go of (its generator and
		// transcript, G1): drop them before a dependent can start.
		end.wait, end.then = nil, nil
	}
	n, err, tctx := end.n, end.err, end.ctx
	b.mu.Lock()
	n.cancel = nil
	n.t.Attempts = end.attempts
	n.t.Finished = b.opts.Now()
	e := event.Event{Task: n.t.ID, Agent: n.t.Agent(), Elapsed: float64(n.t.Finished.Sub(n.t.Started).Microseconds()) / 1000}
	switch {
	case err == nil:
		// A result that arrives as the run is cancelled is still work done.
		n.t.Status, n.t.Result, n.t.Output = Completed, end.result, end.out
		e.Type, e.Result, e.Output = event.TaskCompleted, end.result, end.out
		if len(end.out) > 0 {
			e.Result = "" // the event carries a typed result once, as JSON
		}
	case tctx.Err() != nil:
		n.t.Status, n.t.Error = Cancelled, "cancelled: "+err.Error()
		e.Type, e.Err = event.TaskCancelled, n.t.Error
	default:
		n.t.Status, n.t.Error = Failed, err.Error()
		e.Type, e.Err = event.TaskFailed, n.t.Error
	}
	b.mu.Unlock()
	// The terminal event goes out before any dependent can start, so the
	// event stream never shows a task starting before its deps completed.
	b.emit(e)
	b.mu.Lock()
	if err == nil {
		for _, d := range n.dependents {
			d.waiting--
			if d.waiting == 0 && d.t.Status == Pending {
				b.ready = append(b.ready, d)
			}
		}
	}
	b.inflight--
	b.signal()
	b.mu.Unlock()
}

// attemptOnce calls the runner once under the task's timeout. A panic in
// the runner fails the attempt instead of crashing the run. out is the
// typed result the runner set on its task, if any. The runner is given a
// copy of snap in t, the task's own storage for it.
func attemptOnce(ctx context.Context, timeout time.Duration, runner Runner, snap Task, t *Task, deps []DepResult) (result string, out json.RawMessage, err error) {
	actx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	defer func() {
		if r := recover(); r != nil {
			result, out, err = "", nil, &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	*t = snap
	t.Output = nil
	result, err = runner(actx, t, deps)
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("timed out after %s: %w", timeout, err)
	}
	if err == nil {
		out = t.Output
	}
	return result, out, err
}

// waitThen calls a task's deferred wait and, when it returns no error,
// its Then. They run on the goroutine that finishes every deferred task
// (not under attemptOnce's recover), so a panic in either fails the task
// as a runner's panic does instead of ending the process.
func waitThen(wait func() error, then func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	if err = wait(); err == nil && then != nil {
		then()
	}
	return err
}

// PanicError is a runner panic turned into a task failure.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }
