package eval_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/eval"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// A cancelled eval (Ctrl-C) starts no run after the cancel: each would
// leave an empty interrupted record behind. The first job cancels the
// eval while the loop feeding the workers already waits to hand over the
// second.
func TestNoRunStartsAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var started atomic.Int32
	start := func(c context.Context, j eval.Job, opts engine.Options, wrap func(model.Model) model.Model) (*engine.Run, func(error) error, error) {
		started.Add(1)
		time.Sleep(50 * time.Millisecond) // the feeding loop is blocked on the second job by now
		cancel()
		return nil, nil, errors.New("cancelled")
	}
	suite := load(t, "testdata/triggers/triggers.eval.yaml")
	_, err := eval.Run(ctx, []*spec.EvalSuite{suite}, eval.Options{Start: start, Repeat: 3})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v, want the cancel", err)
	}
	if n := started.Load(); n != 1 {
		t.Errorf("%d runs started, want 1: none after the cancel", n)
	}
}

// A run that failed to run measured nothing, in an outcome case as in a
// trigger case: the case fails even when its other runs reach the
// threshold, so the eval exits 1 as "a run failed" says (a replay whose
// cassette is missing must not pass CI).
func TestCaseWithAFailedRunFails(t *testing.T) {
	wf, err := filepath.Abs("testdata/triggers/triggers.workflow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.eval.yaml")
	if err := os.WriteFile(path, []byte("workflow: "+wf+"\nrepeat: 2\nthreshold: 0.5\ncases:\n  - id: hello\n    input: say hello to Ada\n    expect: [{contains: greeter}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(ctx context.Context, j eval.Job, opts engine.Options, wrap func(model.Model) model.Model) (*engine.Run, func(error) error, error) {
		if j.Repeat == 1 {
			return nil, nil, errors.New("open case-hello-2.jsonl: no such file or directory")
		}
		return standinStart(ctx, j, opts, wrap)
	}
	rep := run(t, eval.Options{Start: start}, path)
	c := rep.Cases[0]
	if !c.Runs[0].Passed || c.Runs[1].Error == "" {
		t.Fatalf("runs %+v: want the first passing, the second failed to run", c.Runs)
	}
	if c.Passed || rep.Passed {
		t.Errorf("case passed %v, report passed %v at 1/2 with a run that failed; want both false", c.Passed, rep.Passed)
	}
	var junit bytes.Buffer
	if err := rep.WriteJUnit(&junit); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(junit.String(), `<error message="the runs failed" type="run">run 2: the run failed: open case-hello-2.jsonl`) {
		t.Errorf("junit does not make the case an error:\n%s", junit.String())
	}
}
