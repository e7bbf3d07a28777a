package spec

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/diag"
)

// An agent may list a built-in tool; when the workflow's tools: does not
// offer it, Check warns at the agent's entry, and an unknown name is an
// error with a suggestion among the skill's tools and the built-ins.
func TestAgentBuiltins(t *testing.T) {
	dir := t.TempDir()
	src := "id: s\nname: S\ndescription: d\nversion: 1.0.0\nagents:\n  w: {prompt: p, tools: [Read, Bash]}\n  x: {prompt: p, tools: [Grpe]}\n"
	s, diags := loadSkill(filepath.Join(dir, "s.skill.yaml"), []byte(src))
	errs := diags.Errors(false)
	if len(errs) != 1 || !strings.Contains(errs[0].String(), `agent "x" lists tool "Grpe"`) || !strings.Contains(errs[0].String(), `did you mean "Grep"?`) {
		t.Errorf("loading: %v", diags)
	}
	w := &Workflow{Name: "w", Tools: []string{"Read"}}
	got := Check(w, []*Skill{s})
	if len(got) != 1 || got[0].Severity != diag.Warning || got[0].Pos.Line != 6 || !strings.Contains(got[0].Message, `agent "w" lists Bash, which the workflow's tools: does not offer`) {
		t.Errorf("Check: %v", got)
	}
}
