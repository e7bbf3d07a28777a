package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/lazyre"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// Start builds the run of one job. The caller loads the job's workflow
// (Job.Suite.WorkflowPath), builds its model — recording or replaying it
// as it likes — and passes that model through wrap before the engine gets
// it; opts carries what the eval sets (the sink, the runs folder, a
// workspace) and the caller adds the rest. finish is called once the job
// is over, its judge included, with the run's error, and returns the
// job's error (a cassette not used up, say).
type Start func(ctx context.Context, job Job, opts engine.Options, wrap func(model.Model) model.Model) (run *engine.Run, finish func(error) error, err error)

// Job is one repeat of one case.
type Job struct {
	Suite   *spec.EvalSuite
	Trigger *spec.TriggerCase // a trigger case, or
	Case    *spec.EvalCase    // an outcome case
	// ID is the case's id in the report (TriggerResult.ID, CaseResult.ID).
	ID     string
	Repeat int // 0-based
}

var unsafeName = lazyre.New(`[^A-Za-z0-9._-]+`)

// Name is the job's file-safe name, unique in an eval: a cassette's.
func (j Job) Name() string {
	kind := "case"
	if j.Trigger != nil {
		kind = "trigger"
	}
	return fmt.Sprintf("%s-%s-%d", kind, unsafeName().ReplaceAllString(j.ID, "_"), j.Repeat+1)
}

// Options set an eval.
type Options struct {
	Start Start
	// Repeat, Threshold and Steps override every suite's (0, nil: the
	// suite's, else the defaults).
	Repeat    int
	Threshold *float64
	Steps     int
	// Concurrency bounds the runs at once (0: 1).
	Concurrency int
	// RunsDir is where the runs' records go ("": none).
	RunsDir string
	// Model is the --model the runs use, for the report.
	Model string
	// Progress is told after every run how many of how many are done.
	Progress func(done, total int)
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Run runs every case of suites Repeat times and reports.
func Run(ctx context.Context, suites []*spec.EvalSuite, o Options) (*Report, error) {
	if o.Start == nil {
		return nil, errors.New("eval: no Start")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	started := o.Now()
	rep := &Report{Version: ReportVersion, Model: o.Model, Started: started.UTC()}
	var jobs []Job
	type slot struct{ trigger, cas int }
	var slots []slot
	prices := map[*spec.EvalSuite]map[string]spec.Price{}
	perSkill := map[string]int{}
	for _, s := range suites {
		rep.Suites = append(rep.Suites, s.File)
		if rep.Workflow == "" {
			rep.Workflow = s.WorkflowPath()
		}
		if p, _ := spec.LoadProjectLenient(s.WorkflowPath()); p != nil {
			prices[s] = p.Workflow.Prices
		}
		n := repeatOf(s, o)
		if rep.Repeat == 0 {
			rep.Repeat = n
			rep.Totals.Threshold = thresholdOf(s, o)
		}
		for i := range s.Triggers {
			t := &s.Triggers[i]
			perSkill[t.Skill]++
			id := fmt.Sprintf("%s/%d", t.Skill, perSkill[t.Skill])
			rep.Triggers = append(rep.Triggers, TriggerResult{ID: id, Skill: t.Skill, Query: t.Query, ShouldTrigger: t.ShouldTrigger,
				At: t.Pos, Runs: make([]RunResult, n)})
			for r := range n {
				jobs = append(jobs, Job{Suite: s, Trigger: t, ID: id, Repeat: r})
				slots = append(slots, slot{len(rep.Triggers) - 1, -1})
			}
		}
		for i := range s.Cases {
			c := &s.Cases[i]
			rep.Cases = append(rep.Cases, CaseResult{ID: c.ID, Input: c.Input, Expected: c.Expected, At: c.Pos, Runs: make([]RunResult, n)})
			for r := range n {
				jobs = append(jobs, Job{Suite: s, Case: c, ID: c.ID, Repeat: r})
				slots = append(slots, slot{-1, len(rep.Cases) - 1})
			}
		}
	}
	conc := max(o.Concurrency, 1)
	var mu sync.Mutex
	done := 0
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(conc, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if ctx.Err() != nil {
					// Cancelled (Ctrl-C): a run started now would stop at
					// once and leave an empty interrupted record.
					continue
				}
				j := jobs[i]
				r := runJob(ctx, j, o, prices[j.Suite])
				mu.Lock()
				if s := slots[i]; s.trigger >= 0 {
					rep.Triggers[s.trigger].Runs[j.Repeat] = r
				} else {
					rep.Cases[s.cas].Runs[j.Repeat] = r
				}
				done++
				if o.Progress != nil {
					o.Progress(done, len(jobs))
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range jobs {
		select {
		case <-ctx.Done():
			break feed
		case work <- i:
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	thresholds := map[string]float64{}
	for _, j := range jobs {
		thresholds[j.ID] = thresholdOf(j.Suite, o)
	}
	score(rep, thresholds)
	rep.Elapsed = float64(o.Now().Sub(started).Microseconds()) / 1000
	return rep, nil
}

func repeatOf(s *spec.EvalSuite, o Options) int {
	switch {
	case o.Repeat > 0:
		return o.Repeat
	case s.Repeat > 0:
		return s.Repeat
	}
	return spec.DefaultEvalRepeat
}

func thresholdOf(s *spec.EvalSuite, o Options) float64 {
	switch {
	case o.Threshold != nil:
		return *o.Threshold
	case s.Threshold != nil:
		return *s.Threshold
	}
	return spec.DefaultEvalThreshold
}

// runJob runs one repeat of a case and checks it. A failure to run is the
// run's Error, never the eval's: the other cases go on.
func runJob(ctx context.Context, j Job, o Options, prices map[string]spec.Price) (r RunResult) {
	r = RunResult{Repeat: j.Repeat, Reads: []string{}}
	start := o.Now()
	defer func() { r.Elapsed = float64(o.Now().Sub(start).Microseconds()) / 1000 }()
	rec := &event.Recorder{}
	w := &watch{trigger: j.Trigger != nil}
	if j.Trigger != nil {
		w.steps = j.Suite.Steps
		if o.Steps > 0 {
			w.steps = o.Steps
		}
	}
	opts := engine.Options{Sink: rec, RunsDir: o.RunsDir}
	if j.Case != nil && len(j.Case.Files) > 0 {
		ws, err := caseWorkspace(j.Case.Files)
		if err != nil {
			r.Error = err.Error()
			return r
		}
		defer os.RemoveAll(ws)
		opts.Workspace = ws
	}
	run, finish, err := o.Start(ctx, j, opts, func(m model.Model) model.Model {
		w.inner = m
		return w
	})
	if err != nil {
		r.Error = err.Error()
		return r
	}
	input := ""
	if j.Trigger != nil {
		input = j.Trigger.Query
	} else {
		input = j.Case.Input
	}
	res, runErr := run.Execute(ctx, input)
	if res != nil {
		r.RunID, r.Record, r.Answer = res.RunID, res.Dir, res.Answer
	}
	calls, watched := w.observed()
	for _, e := range rec.Events() {
		switch e.Type {
		case event.Request:
			r.Steps++
		case event.RunFinished:
			if e.Usage != nil {
				r.Usage = *e.Usage
			}
			r.Cost = e.Cost
		}
	}
	if j.Trigger != nil {
		r.Reads = append(r.Reads, watched...)
		r.Answer = ""
	} else {
		r.Reads = append(r.Reads, reads(calls)...)
		if runErr == nil && w.inner != nil {
			r.Assertions = check(ctx, j, &r, calls, judgeModel(w.inner, j.Suite.Judge), prices)
		}
	}
	if err := finish(runErr); err != nil {
		r.Error = err.Error()
	}
	r.Passed = r.Error == ""
	if j.Trigger != nil {
		r.Passed = r.Passed && contains(r.Reads, j.Trigger.Skill) == j.Trigger.ShouldTrigger
	}
	for _, a := range r.Assertions {
		r.Passed = r.Passed && a.Passed
	}
	return r
}

// caseWorkspace is a fresh folder holding a case's files, each by its
// base name, made before the run starts (V5).
func caseWorkspace(files []string) (string, error) {
	dir, err := os.MkdirTemp("", "fsd-eval-*")
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if err := copyFile(f, filepath.Join(dir, filepath.Base(f))); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("case file %s: %w", f, err)
		}
	}
	return dir, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// firstLine is s's first line, for one-line messages.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
