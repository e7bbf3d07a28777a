package spec

import (
	"fmt"
	"slices"

	"github.com/fsdrun/fsd/diag"
)

// WorkspaceTools are the built-in action tools a workflow's tools: (and
// an agent's) may list, named as Claude Code names them. Package
// workspace defines them; it imports spec, so the names are spelled here
// for the manifests and its TestNamesMatchSpec holds the two together.
var WorkspaceTools = []string{"Bash", "Read", "Write", "Edit", "Glob", "Grep"}

// WorkspaceDir is the workspace folder the workflow's workspace: names,
// relative to its folder ("." is the workflow's folder; a leading ~ is
// the home folder); "" when the workflow names none.
func (w *Workflow) WorkspaceDir() string {
	if w.Workspace == "" {
		return ""
	}
	return ExpandPath(w.Workspace, w.Dir)
}

// decodeWorkflowTools reads the workflow's tools: the built-in tools it
// offers, each a name of WorkspaceTools.
func decodeWorkflowTools(d *decoder, f field, w *Workflow) {
	w.Tools, w.ToolsPos = d.strList(f.v)
	for i, name := range w.Tools {
		if !slices.Contains(WorkspaceTools, name) {
			hint := didYouMean(name, WorkspaceTools)
			if hint == "" {
				hint = "the built-in tools are Bash, Read, Write, Edit, Glob and Grep; a skill's own tools come with the skill"
			}
			d.diags = append(d.diags, diag.Diagnostic{Pos: w.ToolsPos[i], Kind: "ref",
				Message: fmt.Sprintf("tools lists %q, which is not a built-in tool", name), Hint: hint})
		}
	}
}

// checkAgentBuiltins warns about an enabled skill's agent that lists a
// built-in tool the workflow does not offer: the workflow's tools: is
// what a run may use, and a skill cannot widen it.
func checkAgentBuiltins(w *Workflow, byID map[string]*Skill, enabled map[string]bool) diag.List {
	var out diag.List
	for id, s := range byID {
		if !enabled[id] {
			continue
		}
		for _, a := range s.Agents {
			for i, name := range a.Tools {
				if slices.Contains(WorkspaceTools, name) && !slices.Contains(w.Tools, name) {
					out = append(out, diag.Diagnostic{Pos: posAt(a.ToolsPos, i, a.At("tools")), Severity: diag.Warning, Kind: "ref",
						Message: fmt.Sprintf("agent %q lists %s, which the workflow's tools: does not offer: the agent runs without it", a.Name, name),
						Hint:    fmt.Sprintf("add %s to the workflow's tools: to let the run use it", name)})
				}
			}
		}
	}
	return out
}
