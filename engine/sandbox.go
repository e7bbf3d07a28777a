package engine

import (
	"errors"
	"os/exec"
	"slices"
	"sync"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/internal/proc"
	"github.com/fsdrun/fsd/internal/sandbox"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/workspace"
)

// describeSandboxes logs at info level (fsd run -v) what confines the
// programs of each skill that has some: its sandbox, and a program's own
// where its settings make it differ; and the Bash tool's, when the
// workflow offers it. A workflow without programs probes
// nothing, so it runs where no sandbox can be had.
func (tb *toolbox) describeSandboxes(skills []*spec.Skill, log zerolog.Logger) {
	if log.GetLevel() > zerolog.InfoLevel {
		return
	}
	if tb.workflow != nil && slices.Contains(tb.workflow.Tools, workspace.Bash) {
		log.Info().Str("tool", workspace.Bash).Msg(describe(tb.sandboxFor(nil, nil)))
	}
	for _, s := range skills {
		if !hasPrograms(s) {
			continue
		}
		skillWide := tb.sandboxFor(s, nil)
		log.Info().Str("skill", s.ID).Msg(describe(skillWide))
		own := func(kind, name string, sb *spec.Sandbox) {
			if sb == nil {
				return
			}
			if d := describe(tb.sandboxFor(s, sb)); d != describe(skillWide) {
				log.Info().Str("skill", s.ID).Str(kind, name).Msg(d)
			}
		}
		for _, t := range s.Tools {
			if t.Run.Kind == spec.RunCommand {
				own("tool", t.Name, t.Run.Sandbox)
			}
		}
		for _, m := range s.MCP {
			if m.Stdio() {
				own("mcp", m.Name, m.Sandbox)
			}
		}
	}
}

// describe is one line on a program's sandbox; nil is none.
func describe(p *sandbox.Policy) string {
	if p == nil {
		return "sandbox: off (the workflow says sandbox: off): programs run unconfined, with the user's rights"
	}
	return sandbox.Describe(*p)
}

// hasPrograms reports whether a skill can start a program: a command
// tool, a stdio MCP server, a script.
func hasPrograms(s *spec.Skill) bool {
	for _, t := range s.Tools {
		if t.Run.Kind == spec.RunCommand {
			return true
		}
	}
	for _, m := range s.MCP {
		if m.Stdio() {
			return true
		}
	}
	return hasScripts(s)
}

// refusedOnce wraps how programs are sandboxed (wrap; nil is
// sandbox.Wrap) so that the first program refused for want of a sandbox
// puts one line on the log naming the fixes; the model reads the same in
// each refused call's result.
//
// T10: no sandbox, no program: the call fails and the log says why, once.
func refusedOnce(wrap proc.Wrap, log zerolog.Logger) proc.Wrap {
	if wrap == nil {
		wrap = sandbox.Wrap
	}
	var once sync.Once
	return func(cmd *exec.Cmd, p sandbox.Policy) (func(), error) {
		cleanup, err := wrap(cmd, p)
		if errors.Is(err, sandbox.ErrUnavailable) {
			once.Do(func() { log.Error().Err(err).Msg("skills' programs do not run on this machine") })
		}
		return cleanup, err
	}
}
