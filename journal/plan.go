package journal

// Action is what a resumed run does with one tool call of a step it
// replays from the journal.
type Action int

// The actions.
const (
	// Execute runs the tool (again). For a tool without side effects
	// outside the run (reads, state, store, board, reply) this rebuilds
	// the run's state; its answer must match the journal's, if any.
	Execute Action = iota
	// UseJournal answers with the journaled result and runs nothing: a
	// command that completed never runs again (exactly once).
	UseJournal
	// Retry runs a command whose call is journaled but whose result is
	// not: it may or may not have run before the crash. It runs again with
	// the same call id (at least once); a tool that dedupes on the id
	// makes its effect exactly once.
	Retry
	// FailInDoubt answers the in-doubt call with OutcomeUnknown and runs
	// nothing (on-interrupt: fail): at most once.
	FailInDoubt
)

// OutcomeUnknown is the error result the model reads for an in-doubt
// call of a tool that must not run twice.
const OutcomeUnknown = "outcome unknown: interrupted while running"

// Call is what the journal and the tool say about one call of a replayed
// step.
type Call struct {
	// Result: the journal holds the call's result.
	Result bool
	// Command: the tool runs a program (side effects outside the run).
	Command bool
	// FailsInDoubt: the tool declares on-interrupt: fail.
	FailsInDoubt bool
}

// Plan decides what a resumed run does with a call whose step the journal
// holds. Calls of steps the journal does not hold are live: Execute.
//
// R3: a journaled result exactly once; an in-doubt call per on-interrupt.
func Plan(c Call) Action {
	switch {
	case !c.Command:
		return Execute
	case c.Result:
		return UseJournal
	case c.FailsInDoubt:
		return FailInDoubt
	}
	return Retry
}
