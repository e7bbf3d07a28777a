package spec

import "fmt"

// Durability says when a generator waits for its journal lines to be on
// disk (see docs/design.md, "Durability"): the workflow's `durability:`,
// fsd run --durability, and what a task attempt carries to its worker.
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

// ParseDurability checks a durability value ("" is the default).
func ParseDurability(s string) (Durability, error) {
	switch d := Durability(s); d {
	case "":
		return DurabilityStep, nil
	case DurabilityStep, DurabilityEffects:
		return d, nil
	}
	return "", fmt.Errorf("durability must be %s or %s, not %q", DurabilityStep, DurabilityEffects, s)
}
