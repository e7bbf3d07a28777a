package engine

import (
	"slices"
	"testing"

	"github.com/fsdrun/fsd/artifact"
	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/workspace"
)

// spec.ReservedTools, which a skill tool may not be named, is exactly the
// set of tools fsd itself offers: spec cannot import the packages that
// define them, so this test holds the two spellings together.
func TestReservedToolsAreFsdsTools(t *testing.T) {
	testpar.UnlessRace(t)
	own := []string{readSkillDef.Name, runScriptDef.Name}
	for _, d := range board.Tools() {
		own = append(own, d.Name)
	}
	for _, d := range artifact.Tools() {
		own = append(own, d.Name)
	}
	own = append(own, workspace.Names()...)
	slices.Sort(own)
	if got := slices.Sorted(slices.Values(spec.ReservedTools)); !slices.Equal(got, own) {
		t.Errorf("spec.ReservedTools = %v; fsd's own tools are %v", got, own)
	}
}
