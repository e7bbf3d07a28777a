package engine

import (
	"context"
	"fmt"

	"github.com/fsdrun/fsd/board"
)

// Durability says when a generator waits for its journal lines to be on
// disk (see docs/design.md, "Durability").
type Durability string

// The durability modes.
const (
	// DurabilityStep (the default): every step waits for the commit that
	// covers it before the next model call, and a task's answer is on
	// disk before the task counts as done. A crash of the machine loses
	// at most the steps in flight.
	DurabilityStep Durability = "step"
	// DurabilityEffects commits asynchronously and waits for the disk
	// only before a command tool, an MCP call or a skill script runs, and
	// before the run's answer is returned. A crash of the machine may
	// lose the steps since the last wait; a resume asks the model for
	// them again. Effects keep every guarantee of DurabilityStep: a call
	// that may have run is journaled before it runs.
	DurabilityEffects Durability = "commit-before-effects"
)

// ParseDurability checks a --durability value ("" is the default).
func ParseDurability(s string) (Durability, error) {
	switch d := Durability(s); d {
	case "":
		return DurabilityStep, nil
	case DurabilityStep, DurabilityEffects:
		return d, nil
	}
	return "", fmt.Errorf("durability must be %s or %s, not %q", DurabilityStep, DurabilityEffects, s)
}

// commit waits, as the run's durability asks, for the generator's
// journal lines so far to be on disk: always before an effect, and at a
// step's end under DurabilityStep. last says the step is the generator's
// final answer: a board worker then has no work left and waits without
// its concurrency slot, so the next task starts meanwhile. (Mid-loop
// waits keep the slot: a worker that gave it up would have to win it
// back, and with concurrency 1 two tasks' steps would interleave.)
func (g *generator) commit(ctx context.Context, effect, last bool) error {
	if !effect && g.durability == DurabilityEffects {
		return nil
	}
	if last {
		board.Leave(ctx)
	}
	if err := g.tr.Sync(); err != nil {
		return g.errorf("transcript: %w", err)
	}
	return nil
}
