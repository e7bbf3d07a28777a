package board

import (
	"context"
	"sync"
)

// slot is a running task's place among the Options.Concurrency tasks
// that may run at once. A runner that has done its work and only waits —
// for the disk, in the engine's journal — gives it up (Leave), so the
// next task starts meanwhile.
type slot struct {
	sem  chan struct{}
	mu   sync.Mutex
	held bool
	// board is set on a board runner's slot only: its task's end can
	// wait for wait, and then call then, after the runner returned (Defer,
	// Then).
	board bool
	wait  func() error
	then  func()
}

type slotKey struct{}

// slotContext is a runner's context with its task's slot: what
// context.WithValue over a separate slot would be, in one allocation.
type slotContext struct {
	context.Context
	s   slot
	end ending // the task's, once its attempts are over (execute)
}

func (c *slotContext) Value(key any) any {
	if key == (slotKey{}) {
		return &c.s
	}
	return c.Context.Value(key)
}

func slotOf(ctx context.Context) *slot {
	s, _ := ctx.Value(slotKey{}).(*slot)
	return s
}

// acquire takes the slot (back); false if ctx ended first.
func (s *slot) acquire(ctx context.Context) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		return true
	}
	select {
	case s.sem <- struct{}{}:
		s.held = true
		return true
	case <-ctx.Done():
		return false
	}
}

// release gives the slot up if it is held.
func (s *slot) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		<-s.sem
		s.held = false
	}
}

// Defer hands the wait for a task's answer to be durable to the board,
// for a runner whose work is done: the runner returns at once and its
// goroutine and slot go to the next task, while the board calls wait on
// a goroutine of its own and only then counts the task done (its
// terminal event, its dependents), or failed with wait's error. Outside
// a board's runner it returns false: the caller waits itself.
//
// F8: a task that waits only for the disk holds no goroutine.
func Defer(ctx context.Context, wait func() error) bool {
	s := slotOf(ctx)
	if s == nil || !s.board {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if first := s.wait; first != nil {
		s.wait = func() error {
			if err := first(); err != nil {
				return err
			}
			return wait()
		}
		return true
	}
	s.wait = wait
	return true
}

// Then calls f after what the task's runner deferred (Defer) returned
// without error, before the task counts as done; at once when nothing is
// deferred. A deferred wait that fails skips f.
func Then(ctx context.Context, f func()) {
	if s := slotOf(ctx); s != nil && s.board {
		s.mu.Lock()
		if s.wait != nil {
			if first := s.then; first != nil {
				s.then = func() { first(); f() }
			} else {
				s.then = f
			}
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
	f()
}

// takeEnds returns what the task's last attempt deferred and forgets it.
func (s *slot) takeEnds() (wait func() error, then func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wait, then = s.wait, s.then
	s.wait, s.then = nil, nil
	return wait, then
}

// Leave gives up the concurrency slot of the task whose runner ctx
// belongs to, for the rest of its attempt: the runner has no more work to
// do, only to wait (for its result to be durable). Outside a board's
// runner it does nothing.
func Leave(ctx context.Context) {
	if s := slotOf(ctx); s != nil {
		s.release()
	}
}
