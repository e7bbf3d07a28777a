package spec_test

import (
	"fmt"
	"path/filepath"

	"github.com/fsdrun/fsd/spec"
)

func ExampleLoadProject() {
	p, diags := spec.LoadProject(filepath.Join("..", "examples", "pipeline.workflow.yaml"))
	if err := diags.Err(); err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range p.Workflow.Tasks {
		fmt.Println(t.ID, "→", t.Assignee, t.Deps)
	}
	// Output:
	// gather → weekly-report/extractor []
	// gather-previous → weekly-report/extractor []
	// brief → weekly-report/summarizer [gather gather-previous]
	// audit → weekly-report/auditor [brief gather gather-previous]
	// polish → brand-voice/editor [brief audit]
}

func ExampleValidatePaths() {
	for _, d := range spec.ValidatePaths([]string{filepath.Join("testdata", "bad", "cycle.workflow.yaml")}, false) {
		fmt.Println(d)
	}
	// Output:
	// testdata/bad/cycle.workflow.yaml:4:10: dependency cycle: "a" -> "c" -> "b" -> "a" [cycle]
	// testdata/bad/cycle.workflow.yaml:7:10: dependency cycle: "self" -> "self" [cycle]
	// testdata/bad/cycle.workflow.yaml:8:10: dependency cycle: "x" -> "y" -> "x" [cycle]
}

func ExampleValidID() {
	fmt.Println(spec.ValidID("weekly-report"), spec.ValidID("Weekly_Report"), spec.ValidID("a--b"))
	// Output: true false false
}
