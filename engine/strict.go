package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/fsdrun/fsd/spec"
)

// ErrStrict is wrapped by Execute's error when a strict run (Options.Strict
// or the workflow's `strict: true`) meets a skill that was skipped or an
// MCP server that cannot start: a run that goes on without part of its
// setup is one a CI job must not report as passing.
var ErrStrict = errors.New("strict")

// strictness fails a strict run from wherever the problem shows (C7): at the
// start for skipped skills, from the MCP pool for a server that cannot
// start, which happens inside a tool call, so the run's context carries
// the cause to whatever step is running.
type strictness struct {
	on   bool
	mu   sync.Mutex
	stop context.CancelCauseFunc // the run's; nil before Execute starts it
	err  error                   // the first failure
}

// skipped is the error for a strict run's skipped skills, nil when none
// were skipped.
func (st *strictness) skipped(list []spec.Skipped) error {
	if !st.on || len(list) == 0 {
		return nil
	}
	parts := make([]string, len(list))
	for i, s := range list {
		parts[i] = fmt.Sprintf("skill %q was skipped: %s: %s", s.ID, s.Pos, s.Reason)
	}
	return st.fail(fmt.Errorf("%w: %s (fsd validate shows every problem)", ErrStrict, strings.Join(parts, "; ")))
}

// mcpUnavailable fails a strict run when one of a skill's MCP servers
// cannot be used; mask takes secrets out of the server's error.
func (st *strictness) mcpUnavailable(mask func(string) string) func(*spec.Skill, string, error) {
	return func(s *spec.Skill, server string, err error) {
		if st.on {
			st.fail(fmt.Errorf("%w: MCP server %q of skill %q cannot start: %s", ErrStrict, server, s.ID, mask(err.Error())))
		}
	}
}

// fail records err (the first one wins) and ends the run with it.
func (st *strictness) fail(err error) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err == nil {
		st.err = err
	}
	if st.stop != nil {
		st.stop(st.err)
	}
	return st.err
}

// start hands the run's cancel function over once Execute has it.
func (st *strictness) start(stop context.CancelCauseFunc) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.stop = stop
	if st.err != nil {
		stop(st.err)
	}
}

// result is the run's error once it returned err: the strict failure
// when there was one, whatever the steps made of the cancelled context.
func (st *strictness) result(err error) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err != nil {
		return st.err
	}
	return err
}
