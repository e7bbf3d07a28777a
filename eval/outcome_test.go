package eval_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/eval"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// The example outcome eval passes with the stand-in, and between its
// cases every assertion kind is checked, the judge's included.
func TestExampleOutcomes(t *testing.T) {
	rep := run(t, eval.Options{}, "../examples/evals/outcomes.eval.yaml")
	if !rep.Passed {
		var b strings.Builder
		_ = rep.WriteText(&b)
		t.Fatalf("the example eval failed:\n%s", b.String())
	}
	kinds := map[string]bool{}
	judged := 0
	for _, c := range rep.Cases {
		for _, r := range c.Runs {
			for _, a := range r.Assertions {
				kinds[strings.Fields(a.Assertion)[0]] = true
				if strings.HasPrefix(a.Assertion, "judge") {
					judged++
				}
			}
		}
	}
	var missing []string
	for _, k := range spec.AssertionKinds {
		if !kinds[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Errorf("the example checks no %v", missing)
	}
	if judged == 0 || rep.Totals.Cost == 0 {
		t.Errorf("%d judge verdicts, cost %v: want the judge run and priced", judged, rep.Totals.Cost)
	}
}

// Each assertion kind fails a run that breaks it.
func TestEveryAssertionCanFail(t *testing.T) {
	rep := run(t, eval.Options{}, "testdata/outcomes/wrong.eval.yaml")
	c := rep.Cases[0]
	if c.Passed || c.Runs[0].Error != "" {
		t.Fatalf("case passed %v, error %q; want it failed by its assertions", c.Passed, c.Runs[0].Error)
	}
	var passed []string
	for _, a := range c.Runs[0].Assertions {
		if a.Passed {
			passed = append(passed, a.Assertion)
		}
	}
	if n := len(c.Runs[0].Assertions); n != len(spec.AssertionKinds) || len(passed) > 0 {
		t.Errorf("%d assertions checked, these passed: %v; want all %d failing", n, passed, len(spec.AssertionKinds))
	}
}

// A case's files are in the run's workspace before it starts.
func TestCaseFilesInWorkspace(t *testing.T) {
	var seen []string
	start := func(ctx context.Context, j eval.Job, opts engine.Options, wrap func(model.Model) model.Model) (*engine.Run, func(error) error, error) {
		if j.Case != nil && j.Case.ID == "welcome-ada" {
			entries, _ := os.ReadDir(opts.Workspace)
			for _, e := range entries {
				data, _ := os.ReadFile(filepath.Join(opts.Workspace, e.Name()))
				seen = append(seen, e.Name()+": "+strings.TrimSpace(string(data)))
			}
		}
		return standinStart(ctx, j, opts, wrap)
	}
	run(t, eval.Options{Repeat: 1, Start: start}, "../examples/evals/outcomes.eval.yaml")
	sort.Strings(seen)
	if want := "notes.txt: Ada joins the platform team on Monday."; len(seen) != 1 || seen[0] != want {
		t.Errorf("workspace holds %q, want [%q]", seen, want)
	}
}
