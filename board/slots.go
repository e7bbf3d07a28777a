package board

import "context"

// Slots is a concurrency limit for runners outside a board — a NATS
// worker's --concurrency — with the same Park: a task that waits for a
// person gives its slot to others meanwhile.
type Slots struct{ sem chan struct{} }

// NewSlots returns a limit of n tasks at once (n < 1: 1).
func NewSlots(n int) *Slots { return &Slots{sem: make(chan struct{}, max(n, 1))} }

// Take waits for a free slot. The returned ctx carries it (Park and
// Leave act on it); release gives it up for good. ok is false when ctx
// ended first.
func (l *Slots) Take(ctx context.Context) (tctx context.Context, release func(), ok bool) {
	s := &slot{sem: l.sem}
	if !s.acquire(ctx) {
		return ctx, func() {}, false
	}
	return context.WithValue(ctx, slotKey{}, s), s.release, true
}
