package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/transcript"
	"github.com/fsdrun/fsd/work"
)

// fakeDispatcher answers every task attempt with answer(t) and keeps the
// tasks it was given.
type fakeDispatcher struct {
	mu     sync.Mutex
	tasks  map[string]work.Attempt
	answer func(t *work.Attempt) *work.Outcome
}

func (d *fakeDispatcher) Dispatch(_ context.Context, t *work.Attempt, _ event.Sink, _ work.Approver) (*work.Outcome, error) {
	d.mu.Lock()
	if d.tasks == nil {
		d.tasks = map[string]work.Attempt{}
	}
	d.tasks[t.Task] = *t
	d.mu.Unlock()
	if d.answer != nil {
		return d.answer(t), nil
	}
	return &work.Outcome{Result: "done " + t.Task}, nil
}

// TestRemoteDeadlineIsTheAgentsTimeout: a task sent to a worker carries
// its agent's timeout as its deadline, never the run's (--timeout): a
// coordinator that times out leaves its tasks running on the workers, as
// an interrupted one does, for a resume to pick up.
func TestRemoteDeadlineIsTheAgentsTimeout(t *testing.T) {
	testpar.UnlessRace(t)
	s := team()
	s.Agents = append(s.Agents, spec.Agent{Name: "timed", Prompt: "T", Timeout: time.Hour})
	p := project(s)
	p.Workflow.Host = nil
	p.Workflow.Tasks = []spec.Task{{ID: "untimed", Goal: "g", Assignee: "team/iso"}, {ID: "timed", Goal: "g", Assignee: "team/timed"}}
	d := &fakeDispatcher{}
	r, err := New(p, Options{Model: &recModel{}, Dispatcher: d})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the run's --timeout
	defer cancel()
	before := time.Now()
	if _, err := r.Execute(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if dl := d.tasks["untimed"].Deadline; !dl.IsZero() {
		t.Errorf("a task whose agent has no timeout got the deadline %v (the run's)", dl)
	}
	if dl := d.tasks["timed"].Deadline; dl.Before(before.Add(time.Hour)) {
		t.Errorf("a task whose agent times out after 1h got the deadline %v, want at least %v", dl, before.Add(time.Hour))
	}
}

// journalingDispatcher is a dispatcher whose worker journals: each
// attempt's transcript is a task message and the answer "done TASK", and
// AttemptLog serves it (as natsboard's Coordinator serves the worker's
// attempt log from JetStream). block holds a task's Dispatch until ctx ends.
type journalingDispatcher struct {
	fakeDispatcher
	block   string
	short   string // a task whose journal reads cut after one entry
	reads   map[string]int
	mu      sync.Mutex
	blocked chan struct{}
}

// remoteEntries is the transcript a worker journals for an attempt.
func remoteEntries(task string) []json.RawMessage {
	var out []json.RawMessage
	tr := transcript.New(writerFunc(func(b []byte) (int, error) {
		out = append(out, json.RawMessage(strings.TrimSuffix(string(b), "\n")))
		return len(b), nil
	}), transcript.WithClock(func() time.Time { return time.Unix(0, 0).UTC() }))
	_ = tr.AppendMessage(model.Message{Role: model.User, Text: "task " + task})
	_ = tr.AppendMessage(model.Message{Role: model.Assistant, Text: "done " + task})
	return out
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func (d *journalingDispatcher) Dispatch(ctx context.Context, t *work.Attempt, s event.Sink, a work.Approver) (*work.Outcome, error) {
	if t.Task == d.block {
		close(d.blocked)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	res, err := d.fakeDispatcher.Dispatch(ctx, t, s, a)
	res.Logged = len(remoteEntries(t.Task))
	return res, err
}

func (d *journalingDispatcher) AttemptLog(_ context.Context, run, task string, attempt int) ([]json.RawMessage, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.reads == nil {
		d.reads = map[string]int{}
	}
	d.reads[task]++
	if task == d.short {
		return remoteEntries(task)[:1], nil
	}
	return remoteEntries(task), nil
}

// recordedTranscripts reads a run record's journal: task -> its
// attempt-1 messages' texts.
func recordedTranscripts(t *testing.T, dir string) map[string][]string {
	t.Helper()
	gens, err := runrecord.ReadJournal(filepath.Join(dir, runrecord.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, g := range gens {
		if g.Gen.Task == "" || g.Gen.Attempt != 1 {
			continue
		}
		msgs, err := transcript.Rebuild(g.Entries)
		if err != nil {
			t.Fatalf("%s: %v", g.Name, err)
		}
		for _, m := range msgs {
			out[g.Gen.Task] = append(out[g.Gen.Task], m.Text)
		}
	}
	return out
}

// TestRemoteTranscriptsInRecord: the transcript a worker journaled for a
// remote task attempt is copied into the coordinator's journal.jsonl
// under the attempt's generator, so fsd show, ui and report read it like
// a local one; a resumed coordinator does not copy it twice, and its
// task.completed says replayed for an outcome its predecessor recorded,
// not for one that arrived while it was down.
func TestRemoteTranscriptsInRecord(t *testing.T) {
	p := project(team())
	p.Workflow.Host = nil
	p.Workflow.Tasks = []spec.Task{{ID: "a", Goal: "one", Assignee: "team/iso"}, {ID: "b", Goal: "two", Assignee: "team/iso", Deps: []string{"a"}}}
	d := &journalingDispatcher{block: "b", blocked: make(chan struct{})}
	r, err := New(p, Options{Model: &recModel{}, Dispatcher: d, RunsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-d.blocked; cancel() }() // the coordinator stops while b runs
	res, err := r.Execute(ctx, "")
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("first run: %v, want interrupted", err)
	}
	want := []string{"task a", "done a"}
	if got := recordedTranscripts(t, res.Dir); len(got) != 1 || strings.Join(got["a"], "|") != strings.Join(want, "|") {
		t.Fatalf("journal after the first run: %v; want a's remote transcript %v", got, want)
	}

	// b's outcome was committed while the coordinator was down.
	d2 := &journalingDispatcher{}
	_, evs, err := resume(t, p, res.Dir, &recModel{}, Options{Dispatcher: d2})
	if err != nil {
		t.Fatal(err)
	}
	got := recordedTranscripts(t, res.Dir)
	if strings.Join(got["a"], "|") != "task a|done a" || strings.Join(got["b"], "|") != "task b|done b" {
		t.Errorf("journal after the resume: %v; want a's and b's transcripts once each", got)
	}
	if d2.reads["a"] != 0 || d2.reads["b"] != 1 {
		t.Errorf("journal reads on resume: %v; want none for a (recorded), one for b", d2.reads)
	}
	replayed := map[string]bool{}
	for _, e := range evs {
		if e.Type == event.TaskCompleted {
			replayed[e.Task] = e.Replayed
		}
	}
	if !replayed["a"] || replayed["b"] {
		t.Errorf("task.completed replayed: %v; want a (its outcome was recorded) and not b (new)", replayed)
	}
}

// A record holding part of a remote attempt's transcript (a copy cut
// short) gets the rest on resume, once; a record holding another
// transcript of the attempt (it ran in process before the run was resumed
// with a dispatcher) is not mixed with the worker's.
func TestRemoteTranscriptCompletedOrKept(t *testing.T) {
	p := project(team())
	p.Workflow.Host = nil
	p.Workflow.Tasks = []spec.Task{{ID: "a", Goal: "one", Assignee: "team/iso"}, {ID: "b", Goal: "two", Assignee: "team/iso", Deps: []string{"a"}}}
	d := &journalingDispatcher{block: "b", short: "a", blocked: make(chan struct{})}
	r, err := New(p, Options{Model: &recModel{}, Dispatcher: d, RunsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-d.blocked; cancel() }()
	res, _ := r.Execute(ctx, "")
	if got := recordedTranscripts(t, res.Dir)["a"]; len(got) != 1 {
		t.Fatalf("a's transcript after a short read: %q", got)
	}
	_, evs, err := resume(t, p, res.Dir, &recModel{}, Options{Dispatcher: &journalingDispatcher{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(recordedTranscripts(t, res.Dir)["a"], "|"); got != "task a|done a" {
		t.Errorf("a's transcript after the resume: %q, want it whole, once", got)
	}
	for _, e := range evs {
		if e.Type == event.TaskCompleted && e.Task == "a" && e.Replayed {
			t.Error("a's completion says replayed, but the record did not hold its whole transcript")
		}
	}

	// b ran here first, and crashed after its first step.
	local := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.TaskID == "b" {
			return nil, errCrash
		}
		return &model.Response{Text: "a done"}, nil
	})
	r, _ = New(p, Options{Model: local, RunsDir: t.TempDir()})
	res, err = r.Execute(context.Background(), "")
	if err == nil || !strings.Contains(err.Error(), "crash") {
		t.Fatalf("local run: %v, want b crashed", err)
	}
	before := recordedTranscripts(t, res.Dir)["b"]
	if len(before) == 0 {
		t.Fatal("b's local transcript is not in the record")
	}
	if _, _, err := resume(t, p, res.Dir, &recModel{}, Options{Dispatcher: &journalingDispatcher{}}); err != nil {
		t.Fatal(err)
	}
	if got := recordedTranscripts(t, res.Dir)["b"]; strings.Join(got, "|") != strings.Join(before, "|") {
		t.Errorf("b's transcript after the resume on a worker: %q; want the local one kept, not mixed: %q", got, before)
	}
}

// TestRemoteUsagePricedByItsModel: a remote attempt's usage is priced by
// the model it ran with (fsd run --model maps the workflow's for the
// workers), as an in-process call is priced by the model that answered,
// not by the workflow's model string.
func TestRemoteUsagePricedByItsModel(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(team())
	p.Workflow.Host = nil
	p.Workflow.Model = "workflow/model"
	p.Workflow.Tasks = []spec.Task{{ID: "a", Goal: "g", Assignee: "team/iso"}}
	p.Workflow.Prices = map[string]spec.Price{"workflow/model": {Input: 1}, "override/model": {Input: 100}}
	d := &fakeDispatcher{answer: func(t *work.Attempt) *work.Outcome {
		return &work.Outcome{Result: "done", Model: "override/model", Usage: model.Usage{InputTokens: 1000}}
	}}
	rec := &event.Recorder{}
	r, err := New(p, Options{Model: &recModel{}, Dispatcher: d, Sink: rec})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	finished := 0
	for _, e := range rec.Events() {
		if e.Type == event.RunFinished {
			finished++
			if want := (spec.Price{Input: 100}).Cost(1000, 0, 0, 0); e.Cost != want {
				t.Errorf("run cost %v, want %v (override/model's price)", e.Cost, want)
			}
		}
	}
	if finished != 1 {
		t.Fatalf("%d run.finished events", finished)
	}
	// A worker's outcome names the model it was sent.
	res := Work(context.Background(), &work.Attempt{Run: "r", Task: "a", Number: 1, Goal: "g", Model: "override/model"}, work.Options{Model: &recModel{}})
	if res.Model != "override/model" {
		t.Errorf("Work's outcome names the model %q, want override/model", res.Model)
	}
}

// A task retried on workers names the worker of each attempt on its end
// event, with each failed attempt's error, and its last worker as before;
// a task tried once names only its worker.
//
// O10: the record names the worker of each attempt.
func TestEachAttemptNamesItsWorker(t *testing.T) {
	testpar.UnlessRace(t)
	s := team()
	s.Agents = append(s.Agents, spec.Agent{Name: "flaky", Prompt: "F", Retries: 2})
	p := project(s)
	p.Workflow.Host = nil
	p.Workflow.Tasks = []spec.Task{{ID: "once", Goal: "g", Assignee: "team/iso"}, {ID: "twice", Goal: "g", Assignee: "team/flaky"}}
	d := &fakeDispatcher{answer: func(a *work.Attempt) *work.Outcome {
		if a.Task == "twice" && a.Number == 1 {
			return &work.Outcome{Error: "the disk filled", Worker: "w1", Host: "box", PID: 11}
		}
		return &work.Outcome{Result: "done", Worker: fmt.Sprintf("w%d", a.Number+1), Host: "box", PID: 12}
	}}
	var mu sync.Mutex
	ends := map[string]event.Event{}
	sink := event.SinkFunc(func(e event.Event) {
		if e.Type == event.TaskCompleted {
			mu.Lock()
			ends[e.Task] = e
			mu.Unlock()
		}
	})
	r, err := New(p, Options{Model: &recModel{}, Dispatcher: d, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	w1, w3 := &event.Worker{Name: "w1", Host: "box", PID: 11}, &event.Worker{Name: "w3", Host: "box", PID: 12}
	want := []event.Attempt{{N: 1, Worker: w1, Err: "the disk filled"}, {N: 2, Worker: w3}}
	if e := ends["twice"]; !reflect.DeepEqual(e.Attempts, want) || !reflect.DeepEqual(e.Worker, w3) {
		t.Errorf("twice: worker %v, attempts %+v; want %v and %+v", e.Worker, e.Attempts, w3, want)
	}
	if e := ends["once"]; e.Attempts != nil || e.Worker == nil || e.Worker.Name != "w2" {
		t.Errorf("once: worker %v, attempts %+v; want w2 and no list", e.Worker, e.Attempts)
	}
}
