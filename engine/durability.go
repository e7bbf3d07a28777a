package engine

import (
	"context"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/spec"
)

// commit waits, as the run's durability asks, for the generator's
// journal lines so far to be on disk: always before an effect, and at a
// step's end under spec.DurabilityStep. last says the step is the generator's
// final answer: a board worker then has no work left and waits without
// its concurrency slot, so the next task starts meanwhile, and hands the
// wait to the board (board.Defer) where it can, so that the wait holds no
// goroutine either: the board counts the task done once it returns. (Mid-loop
// waits keep the slot: a worker that gave it up would have to win it
// back, and with concurrency 1 two tasks' steps would interleave.)
//
// The final answer does not wait when the caller commits it
// (work.Options.FinalInOutcome: a worker's outcome carries it).
//
// J5: an effect's call is on disk before the effect, in either durability
// mode. J8: only a final answer's wait gives the slot away.
func (g *generator) commit(ctx context.Context, effect, last bool) error {
	if !effect && (g.durability == spec.DurabilityEffects || last && g.finalByCaller) {
		return nil
	}
	if last {
		tr := g.tr
		wait := func() error {
			err := g.synced(tr.Sync())
			if end := g.endSynced; end != nil { // set once the loop returned
				end(err)
			}
			return err
		}
		if board.Defer(ctx, wait) {
			g.deferredAnswer = true
			return nil
		}
		board.Leave(ctx)
	}
	return g.synced(g.tr.Sync())
}

// synced is the error of a wait for the transcript's commit.
func (g *generator) synced(err error) error {
	if err != nil {
		return g.errorf("transcript: %w", err)
	}
	return nil
}
