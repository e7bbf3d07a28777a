package eval_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/eval"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/standin"
	"github.com/fsdrun/fsd/spec"
)

// standinStart runs every job with the stand-in seeded by its repeat.
var standinStart = eval.Local(func(j eval.Job) model.Model { return standin.New(j.Repeat) })

func load(t *testing.T, path string) *spec.EvalSuite {
	t.Helper()
	s, diags := spec.LoadEval(path)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

func run(t *testing.T, o eval.Options, paths ...string) *eval.Report {
	t.Helper()
	var suites []*spec.EvalSuite
	for _, p := range paths {
		suites = append(suites, load(t, p))
	}
	if o.Start == nil {
		o.Start = standinStart
	}
	rep, err := eval.Run(context.Background(), suites, o)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func f(v float64) *float64 { return &v }

// The stand-in's reads are known for every query and seed, so every
// number of a trigger eval is: the near misses ("welcome Grace aboard",
// "a weekly summary") are read on repeats 1 and 3 of 3; greeter/4 reads
// weekly-report, a false read of it; weekly-report/3 (should not) reads
// greeter, which says nothing about greeter's precision.
func TestTriggerNumbers(t *testing.T) {
	rep := run(t, eval.Options{Concurrency: 2}, "testdata/triggers/triggers.eval.yaml")
	type row struct {
		ID     string
		Rate   float64
		Passed bool
	}
	var got []row
	for _, tr := range rep.Triggers {
		if len(tr.Runs) != 3 {
			t.Errorf("%s: %d runs, want 3 (the default repeat)", tr.ID, len(tr.Runs))
		}
		got = append(got, row{tr.ID, tr.Rate, tr.Passed})
	}
	want := []row{
		{"greeter/1", 1, true},
		{"greeter/2", 2.0 / 3, true},
		{"greeter/3", 0, true},
		{"greeter/4", 0, false},
		{"weekly-report/1", 1, true},
		{"weekly-report/2", 2.0 / 3, true},
		{"weekly-report/3", 0, true},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("trigger rates (-want +got):\n%s", d)
	}
	wantSkills := []eval.SkillStats{
		{Skill: "greeter", Queries: 4, Passed: 3, PassRate: 0.75, TruePositives: 5, FalsePositives: 0, FalseNegatives: 4,
			Precision: f(1), Recall: f(5.0 / 9)},
		{Skill: "weekly-report", Queries: 3, Passed: 3, PassRate: 1, TruePositives: 5, FalsePositives: 3, FalseNegatives: 1,
			Precision: f(5.0 / 8), Recall: f(5.0 / 6)},
	}
	if d := cmp.Diff(wantSkills, rep.Skills); d != "" {
		t.Errorf("skills (-want +got):\n%s", d)
	}
	wantConf := []eval.Confusion{
		{Skill: "greeter", ShouldTrigger: true, Read: "", Runs: 1},
		{Skill: "greeter", ShouldTrigger: true, Read: "greeter", Runs: 5},
		{Skill: "greeter", ShouldTrigger: true, Read: "weekly-report", Runs: 3},
		{Skill: "greeter", ShouldTrigger: false, Read: "weekly-report", Runs: 3},
		{Skill: "weekly-report", ShouldTrigger: true, Read: "", Runs: 1},
		{Skill: "weekly-report", ShouldTrigger: true, Read: "weekly-report", Runs: 5},
		{Skill: "weekly-report", ShouldTrigger: false, Read: "greeter", Runs: 3},
	}
	if d := cmp.Diff(wantConf, rep.Confusion); d != "" {
		t.Errorf("confusion (-want +got):\n%s", d)
	}
	if rep.Passed {
		t.Error("the report passed with greeter/4 below the threshold")
	}
	if rep.Totals.Runs != 21 || rep.Totals.Triggers != 7 || rep.Totals.TriggersPassed != 6 {
		t.Errorf("totals %+v, want 21 runs and 6 of 7 queries passed", rep.Totals)
	}
}

// --repeat and --threshold change the rates and marks as skill-creator's
// rule says: 0.67 is below a 0.7 threshold; four repeats read a near miss
// twice (0.5).
func TestRepeatAndThreshold(t *testing.T) {
	rep := run(t, eval.Options{Repeat: 4, Threshold: f(0.7)}, "testdata/triggers/triggers.eval.yaml")
	got := map[string]bool{}
	for _, tr := range rep.Triggers {
		if len(tr.Runs) != 4 {
			t.Fatalf("%s: %d runs, want 4", tr.ID, len(tr.Runs))
		}
		got[tr.ID] = tr.Passed
		if tr.ID == "greeter/2" && tr.Rate != 0.5 {
			t.Errorf("greeter/2's rate over 4 repeats is %v, want 0.5", tr.Rate)
		}
	}
	if got["greeter/2"] || !got["greeter/1"] || !got["greeter/3"] {
		t.Errorf("passes %v: want greeter/2 failing at 0.5 < 0.7, greeter/1 and /3 passing", got)
	}
}

// Each run is a normal run with a record.
func TestRunsAreRecorded(t *testing.T) {
	dir := t.TempDir()
	rep := run(t, eval.Options{Repeat: 1, RunsDir: dir}, "testdata/triggers/triggers.eval.yaml")
	for _, tr := range rep.Triggers {
		r := tr.Runs[0]
		if r.RunID == "" || r.Record == "" || r.Error != "" {
			t.Errorf("%s: run %+v has no record", tr.ID, r)
		}
		if r.Steps == 0 || r.Usage.InputTokens == 0 {
			t.Errorf("%s: steps %d, usage %+v: want the run's model calls counted", tr.ID, r.Steps, r.Usage)
		}
	}
}

// A trigger case watches reads until the first other action and does not
// run that action: the stand-in reads greeter, then calls greet (a word
// of the query), and the run ends before greet runs.
func TestTriggerStopsBeforeAction(t *testing.T) {
	dir := t.TempDir()
	suite := filepath.Join(dir, "t.eval.yaml")
	if err := os.WriteFile(suite, []byte("workflow: "+abs(t, "testdata/triggers/triggers.workflow.yaml")+
		"\nrepeat: 1\ntriggers:\n  greeter:\n    - query: say hello and greet Ada\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var tools []string
	start := func(ctx context.Context, j eval.Job, opts engine.Options, wrap func(model.Model) model.Model) (*engine.Run, func(error) error, error) {
		inner := opts.Sink
		opts.Sink = event.SinkFunc(func(e event.Event) {
			if e.Type == event.ToolResult {
				mu.Lock()
				tools = append(tools, e.Tool)
				mu.Unlock()
			}
			inner.Emit(e)
		})
		return standinStart(ctx, j, opts, wrap)
	}
	rep := run(t, eval.Options{Start: start}, suite)
	r := rep.Triggers[0].Runs[0]
	if !rep.Passed || len(r.Reads) != 1 || r.Reads[0] != "greeter" {
		t.Errorf("reads %v, passed %v: want greeter read", r.Reads, rep.Passed)
	}
	if len(tools) != 1 || tools[0] != "read_skill" {
		t.Errorf("tools run: %v; want read_skill alone (greet chosen, not run)", tools)
	}
	// With steps: 3 the host's first three steps are watched, actions and
	// all: greet runs, and the read is still counted.
	tools = nil
	rep = run(t, eval.Options{Start: start, Steps: 3}, suite)
	if r := rep.Triggers[0].Runs[0]; len(r.Reads) != 1 || len(tools) != 2 || tools[1] != "greet" {
		t.Errorf("steps 3: reads %v, tools run %v; want greeter read and read_skill, greet run", r.Reads, tools)
	}
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// capsModel says it takes images for the host only.
type capsModel struct{ model.Model }

func (capsModel) CapabilitiesFor(c model.Caller) model.Capabilities {
	return model.Capabilities{Tools: true, Images: c.Agent == ""}
}

// The eval's watch passes the run's model's capabilities on per caller,
// so what a request may carry is what it would be without the eval.
func TestWatchKeepsCapabilities(t *testing.T) {
	var got []bool
	start := func(ctx context.Context, j eval.Job, opts engine.Options, wrap func(model.Model) model.Model) (*engine.Run, func(error) error, error) {
		w := wrap(capsModel{standin.New(0)})
		got = append(got, model.CapabilitiesFor(w, model.Caller{}).Images, model.CapabilitiesFor(w, model.Caller{Agent: "a"}).Images)
		return standinStart(ctx, j, opts, func(model.Model) model.Model { return w })
	}
	run(t, eval.Options{Repeat: 1, Start: start}, "testdata/triggers/triggers.eval.yaml")
	if len(got) < 2 || !got[0] || got[1] {
		t.Errorf("images for the host, an agent: %v; want true, false", got[:min(2, len(got))])
	}
}
