package engine

import (
	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/mcptool"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// grantOf is what lets call c of tool t run without asking: the first of
// skills whose allowed-tools lists it. Only a trusted skill grants: an
// untrusted skill's word opens nothing, as its own programs do not run.
// The zero Grant grants nothing.
//
// A15: allowed-tools grants only while its skill is loaded (a worker's:
// its agent's skill), and only when that skill is trusted.
func (tb *toolbox) grantOf(skills []*spec.Skill, c model.ToolCall, t skillTool) runrecord.Grant {
	call := approval.Call{Name: c.Name, Args: c.Args, Workspace: tb.workDir()}
	if m, ok := t.callable.(*mcptool.Tool); ok {
		call.Server, call.Remote = m.Server(), m.Remote()
	}
	for _, s := range skills {
		if len(s.AllowedTools) == 0 || !tb.isTrusted(s) {
			continue
		}
		if g, ok := approval.NewRules(s).Grant(call); ok {
			return g
		}
	}
	return runrecord.Grant{}
}

// loadedSkills are the host's loaded skills in load order: those whose
// allowed-tools may grant a call.
func (m *manager) loadedSkills() []*spec.Skill {
	var out []*spec.Skill
	for _, l := range m.inLoadOrder() {
		out = append(out, l.skill)
	}
	return out
}
