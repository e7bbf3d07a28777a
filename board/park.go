package board

import "context"

// Park gives back the concurrency slot of the task whose runner ctx
// belongs to, for as long as the task waits on something that is not
// work (a person's approval): other tasks may run meanwhile. Unlike
// Leave, the runner has work left: the returned function takes a slot
// again, waiting while the limit is reached, and fails only when ctx ends
// first. Outside a board's runner, Park does nothing and its function
// returns at once.
//
// A6: a task that waits gives its slot back.
func Park(ctx context.Context) (unpark func() error) {
	s := slotOf(ctx)
	if s == nil {
		return func() error { return ctx.Err() }
	}
	s.release()
	return func() error {
		if !s.acquire(ctx) {
			return ctx.Err()
		}
		return nil
	}
}
