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
}

type slotKey struct{}

// slotContext is a runner's context with its task's slot: what
// context.WithValue over a separate slot would be, in one allocation.
type slotContext struct {
	context.Context
	s slot
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

// Leave gives up the concurrency slot of the task whose runner ctx
// belongs to, for the rest of its attempt: the runner has no more work to
// do, only to wait (for its result to be durable). Outside a board's
// runner it does nothing.
func Leave(ctx context.Context) {
	if s := slotOf(ctx); s != nil {
		s.release()
	}
}
