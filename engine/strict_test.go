package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/spec"
)

// skippedProject is a project whose skill "broken" could not be loaded.
func skippedProject() *spec.Project {
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	p.Skipped = []spec.Skipped{{ID: "broken", File: "broken/SKILL.md",
		Pos: diag.Pos{File: "broken/SKILL.md", Line: 3, Col: 7}, Reason: "invalid version \"one\""}}
	return p
}

// A read of a skill that was skipped answers SKILL_UNAVAILABLE with the
// reason, not SKILL_NOT_ENABLED_IN_PROJECT; one that an enabled: list
// leaves out is not enabled, broken or not.
func TestReadSkippedSkillIsUnavailable(t *testing.T) {
	testpar.UnlessRace(t)
	_, m, _, err := runWith(t, skippedProject(), Options{}, read("broken"), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	r := lastResult(m.requests()[1])
	if !r.IsError || !strings.Contains(r.Text, "SKILL_UNAVAILABLE") || !strings.Contains(r.Text, `invalid version \"one\"`) ||
		!strings.Contains(r.Text, "broken/SKILL.md:3:7") {
		t.Errorf("read of a skipped skill answered %s", r.Text)
	}
	p := skippedProject()
	p.Workflow.Enabled, p.Workflow.EnabledSet = []string{"aa"}, true
	_, m, _, err = runWith(t, p, Options{}, read("broken"), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	if r := lastResult(m.requests()[1]); !strings.Contains(r.Text, "SKILL_NOT_ENABLED_IN_PROJECT") {
		t.Errorf("read of a skipped skill enabled: leaves out answered %s", r.Text)
	}
}

// A strict run (the option or the workflow's strict: true) with a skipped
// skill fails before the model is called; without strict it runs.
func TestStrictFailsOnSkippedSkill(t *testing.T) {
	testpar.UnlessRace(t)
	for _, tc := range []struct {
		name          string
		opt, workflow bool
	}{{"option", true, false}, {"workflow", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			p := skippedProject()
			p.Workflow.Strict = tc.workflow
			_, m, _, err := runWith(t, p, Options{Strict: tc.opt}, say("done"))
			if !errors.Is(err, ErrStrict) || !strings.Contains(err.Error(), `skill "broken" was skipped`) {
				t.Errorf("strict run with a skipped skill: err = %v", err)
			}
			if n := len(m.requests()); n != 0 {
				t.Errorf("the model was called %d times", n)
			}
		})
	}
	if res, _, _, err := runWith(t, skippedProject(), Options{}, say("done")); err != nil || res.Answer != "done" {
		t.Errorf("lenient run: %v, %v", res, err)
	}
}

// Under strict, an MCP server that cannot start fails the run when the
// skill that brings it is read; without strict the run goes on and the
// receipt says which server is missing.
func TestStrictFailsOnMCPServerThatCannotStart(t *testing.T) {
	testpar.UnlessRace(t)
	broken := func() *spec.Project {
		s := skill("tracker", "1.0.0", spec.ChannelInline)
		s.Dir = t.TempDir()
		s.MCP = []spec.MCPServer{{Name: "t", Command: []string{"fsd-test-no-such-program"}}}
		return project(s)
	}
	_, _, _, err := runWith(t, broken(), Options{Strict: true, MCPIdle: -1}, read("tracker"), say("done"), say("done"))
	if !errors.Is(err, ErrStrict) || !strings.Contains(err.Error(), `MCP server "t" of skill "tracker" cannot start`) {
		t.Errorf("strict run with an MCP server that cannot start: err = %v", err)
	}
	res, m, _, err := runWith(t, broken(), Options{MCPIdle: -1}, read("tracker"), say("done"))
	if err != nil || res.Answer != "done" {
		t.Fatalf("lenient run: %v, %v", res, err)
	}
	if r := lastResult(m.requests()[1]); !strings.Contains(r.Text, "MCP server t") {
		t.Errorf("receipt = %s", r.Text)
	}
}
