package engine

import (
	"testing"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/spec"
)

// A tool that does not compile (a skill built in Go, which no validation
// saw) is named once: `skill greeter: tool greet: reply: …`, not `tool
// greet: tool greet: …`.
func TestToolCompileErrorNamesToolOnce(t *testing.T) {
	testpar.UnlessRace(t)
	s := &spec.Skill{ID: "greeter", Tools: []spec.Tool{{Name: "greet", Run: spec.ToolRun{Kind: spec.RunReply, Reply: "Hello, {{.name"}}}}
	_, err := newToolbox(nil, nil).compile(s)
	if err == nil {
		t.Fatal("a broken template compiled")
	}
	want := "skill greeter: tool greet: reply: "
	if got := err.Error(); len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("error %q does not start %q", got, want)
	}
}
