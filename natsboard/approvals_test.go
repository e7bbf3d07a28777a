package natsboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testlong"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/scripted"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/work"
)

// approvalProject writes a workflow whose skill "ops" has a command tool
// "effect" (approve: policy) that appends "FSD_CALL_ID n" to the returned
// log and answers "did n" — after hanging for a minute when the file
// log+".hang" exists (it removes it: only one call hangs). It removes the
// file before it logs, so a test that sees the line knows no later call
// can hang, however soon the hanging one is killed. Agents a and b call it with n=1; agent free
// only answers. tasks is the workflow's tasks: list.
func approvalProject(t *testing.T, policy spec.Approve, tasks string) (wf, skills, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "calls.log")
	skills = filepath.Join(dir, "skills")
	must(t, os.MkdirAll(filepath.Join(skills, "ops"), 0o755))
	must(t, os.WriteFile(filepath.Join(skills, "ops", "ops.skill.yaml"), []byte(fmt.Sprintf(`id: ops
name: Ops
description: Runs the effect.
version: 1.0.0
instructions: Run the effect.
tools:
  - name: effect
    description: Logs n.
    approve: %s
    input: {type: object, properties: {n: {type: integer}}}
    run: {command: [sh, -c, 'h=; if [ -e "$1.hang" ]; then rm "$1.hang"; h=1; fi; echo "$FSD_CALL_ID $2" >> "$1"; if [ -n "$h" ]; then sleep 60; fi; printf "did %%s" "$2"', effect, %q, '{{.n}}']}
agents:
  a: {prompt: Run it., tools: [effect]}
  b: {prompt: Run it., tools: [effect]}
  free: {prompt: Answer.}
`, policy, log)), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "ops.script.yaml"), []byte(`agents:
  a:
    - call: effect
      args: {n: 1}
    - say: 'a read: {{.Last}}'
  b:
    - call: effect
      args: {n: 1}
    - say: 'b read: {{.Last}}'
  free:
    - say: free done
`), 0o644))
	wf = filepath.Join(dir, "ops.workflow.yaml")
	// workspace: . — the log's folder — is where the workers' sandboxed
	// command may write.
	must(t, os.WriteFile(wf, []byte("name: ops\nmodel: scripted\nscript: ops.script.yaml\nskills: [./skills]\nworkspace: .\ninput: x\ntasks:\n"+tasks), 0o644))
	return wf, skills, log
}

// natsFixture is a NATS server and a coordinator with a project's skills
// published.
type natsFixture struct {
	url string
	c   *Coordinator
}

func newFixture(t *testing.T, wf string) *natsFixture {
	t.Helper()
	srv := runServer(t)
	c, err := Connect(context.Background(), srv.ClientURL(), Options{})
	must(t, err)
	t.Cleanup(c.Close)
	must(t, c.Publish(context.Background(), project(t, wf)))
	return &natsFixture{url: srv.ClientURL(), c: c}
}

// startWorker runs an in-process worker until the test ends or stop is
// called.
func (f *natsFixture) startWorker(t *testing.T, o WorkerOptions) (stop func()) {
	t.Helper()
	if o.AckWait == 0 {
		o.AckWait = time.Second
	}
	return serve(t, f.url, o)
}

// serve runs an in-process worker on url until the test ends, or until
// stop is called: with the scripted model and a fresh cache unless o names
// them, and quiet unless o.Logger writes somewhere (its zero value does not).
func serve(t testing.TB, url string, o WorkerOptions) (stop func()) {
	t.Helper()
	return serveWith(t, url, o, nil)
}

// serveWith is serve with set called on the worker before it runs.
func serveWith(t testing.TB, url string, o WorkerOptions, set func(*Worker)) (stop func()) {
	t.Helper()
	if o.Model == nil {
		o.Model = scriptedModel
	}
	if o.CacheDir == "" {
		o.CacheDir = t.TempDir()
	}
	w, err := NewWorker(context.Background(), url, o)
	must(t, err)
	if set != nil {
		set(w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done; w.Close() }) }
	t.Cleanup(stop)
	return stop
}

// approvalRun is a run through the coordinator whose approval requests
// the test answers.
type approvalRun struct {
	r         *engine.Run
	runsDir   string
	rec       *event.Recorder
	requested chan event.Event
	done      chan error
	res       *engine.Result
}

func (f *natsFixture) start(t *testing.T, wf string, opts engine.Options) *approvalRun {
	t.Helper()
	p := project(t, wf)
	s, err := scripted.Load(filepath.Join(p.Workflow.Dir, p.Workflow.Script))
	must(t, err)
	ar := &approvalRun{runsDir: t.TempDir(), rec: &event.Recorder{}, requested: make(chan event.Event, 16), done: make(chan error, 1)}
	opts.Model, opts.Dispatcher, opts.RunsDir = scripted.New(s, nil), f.c, ar.runsDir
	opts.Sink = event.Multi{ar.rec, event.SinkFunc(func(e event.Event) {
		if e.Type == event.ApprovalRequested {
			ar.requested <- e
		}
	})}
	ar.r, err = engine.New(p, opts)
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	go func() {
		defer cancel()
		var err error
		ar.res, err = ar.r.Execute(ctx, "")
		ar.done <- err
	}()
	return ar
}

// next waits (bounded) for the next approval request.
func (ar *approvalRun) next(t *testing.T) event.Event {
	t.Helper()
	select {
	case e := <-ar.requested:
		return e
	case err := <-ar.done:
		ar.done <- err
		t.Fatalf("the run ended (%v) before asking for approval", err)
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		t.Fatal("no approval was requested")
	}
	return event.Event{}
}

// wait waits (bounded) for the run's end and checks nothing more was
// asked.
func (ar *approvalRun) wait(t *testing.T) {
	t.Helper()
	select {
	case err := <-ar.done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not finish")
	}
	select {
	case e := <-ar.requested:
		t.Errorf("asked beyond the answers given: %+v", e)
	default:
	}
}

func (ar *approvalRun) summary(t *testing.T) runrecord.Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ar.runsDir, ar.r.ID, runrecord.RunFile))
	must(t, err)
	var s runrecord.Summary
	must(t, json.Unmarshal(b, &s))
	return s
}

// results are the tool results the coordinator's events report for
// tool, in order.
func (ar *approvalRun) results(tool string) []string {
	var out []string
	for _, e := range ar.rec.Events() {
		if e.Type == event.ToolResult && e.Tool == tool {
			out = append(out, e.Result)
		}
	}
	return out
}

func (ar *approvalRun) count(typ string) int {
	n := 0
	for _, e := range ar.rec.Events() {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// approvalLines reads the run's approvals.jsonl: kind and call of each
// line, and the answers.
func approvalLines(t *testing.T, dir string) (kinds []string, answers []runrecord.Answer) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, runrecord.ApprovalsFile))
	must(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l runrecord.ApprovalLine
		must(t, json.Unmarshal([]byte(line), &l))
		kinds = append(kinds, l.Kind+" "+l.Call)
		if l.Answer != nil {
			answers = append(answers, *l.Answer)
		}
	}
	return kinds, answers
}

func logLines(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	must(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestRemoteApproval: a call of an approve: always tool made on a worker
// is answered by the coordinator's approvals — a person through
// Run.Answer or fsd approve from another shell, --approve auto — and
// approved, edited or rejected as in a local run: the worker runs it
// with the answer's arguments or not at all, the model reads the same,
// run.json lists the call as pending while it waits, approvals.jsonl
// records it. The worker (concurrency 1) and the coordinator's board
// (concurrency 1) run an independent task meanwhile: the waiting task
// holds neither slot.
func TestRemoteApproval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mode   approval.Mode
		answer func(t *testing.T, ar *approvalRun, call string)
		ran    string // the command's log
		read   string // what the model read
		by     string
	}{
		{name: "approve", answer: func(t *testing.T, ar *approvalRun, call string) {
			must(t, ar.r.Answer(runrecord.Answer{Call: call, Decision: runrecord.Approved, By: "test"}))
		}, ran: "task:deploy/s1/c1 1", read: "did 1", by: "test"},
		{name: "edit", answer: func(t *testing.T, ar *approvalRun, call string) {
			must(t, ar.r.Answer(runrecord.Answer{Call: call, Decision: runrecord.Edited, Args: json.RawMessage(`{"n":7}`), By: "test"}))
		}, ran: "task:deploy/s1/c1 7", read: "[the approver edited the arguments to {\"n\":7}]\ndid 7", by: "test"},
		{name: "reject", answer: func(t *testing.T, ar *approvalRun, call string) {
			must(t, ar.r.Answer(runrecord.Answer{Call: call, Decision: runrecord.Rejected, Reason: "not on a Friday", By: "test"}))
		}, read: "The call was not run: the approver rejected it (not on a Friday).", by: "test"},
		{name: "fsd approve --edit", answer: func(t *testing.T, ar *approvalRun, call string) {
			out, err := exec.Command(fsdBin, "approve", ar.r.ID, call, "--edit", `{"n": 5}`, "--runs-dir", ar.runsDir).CombinedOutput()
			if err != nil {
				t.Fatalf("fsd approve: %v\n%s", err, out)
			}
		}, ran: "task:deploy/s1/c1 5", read: "[the approver edited the arguments to {\"n\":5}]\ndid 5", by: "fsd approve"},
		{name: "auto", mode: approval.Auto, ran: "task:deploy/s1/c1 1", read: "did 1", by: "auto"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each its own server and worker: mostly waiting
			wf, skills, log := approvalProject(t, spec.ApproveAlways, `  - {id: deploy, assignee: ops/a, goal: deploy}
  - {id: other, assignee: ops/free, goal: answer}
limits: {concurrency: 1}
`)
			f := newFixture(t, wf)
			f.startWorker(t, WorkerOptions{Work: engine.Work, Name: "w1", Concurrency: 1, Trust: []string{skills}})
			ar := f.start(t, wf, engine.Options{Approve: tc.mode})
			if tc.answer != nil {
				e := ar.next(t)
				if e.Approval != "task:deploy/s1/c1" || e.Task != "deploy" || e.Tool != "effect" || string(e.Args) != `{"n":1}` {
					t.Errorf("approval.requested %+v", e)
				}
				if got := logLines(t, log); got != nil {
					t.Fatalf("ran before it was approved: %q", got)
				}
				// The other task runs while deploy waits: neither the
				// worker's slot nor the board's is held by the wait.
				until(t, "the other task to complete while deploy waits", func() bool {
					return ar.count(event.TaskCompleted) == 1
				})
				s := ar.summary(t)
				if s.Status != runrecord.Waiting || len(s.Pending) != 1 || s.Pending[0].Call != e.Approval || s.Pending[0].Task != "deploy" {
					t.Errorf("run.json while the call waits: status %s, pending %+v", s.Status, s.Pending)
				}
				tc.answer(t, ar, e.Approval)
			}
			ar.wait(t)
			if got := strings.Join(logLines(t, log), "|"); got != tc.ran {
				t.Errorf("the command ran %q, want %q", got, tc.ran)
			}
			if got := ar.results("effect"); len(got) != 1 || got[0] != tc.read {
				t.Errorf("the model read %q, want %q", got, tc.read)
			}
			kinds, answers := approvalLines(t, filepath.Join(ar.runsDir, ar.r.ID))
			if tc.mode == "" && strings.Join(kinds, ",") != "requested task:deploy/s1/c1,answered task:deploy/s1/c1" {
				t.Errorf("approvals.jsonl: %q", kinds)
			}
			if len(answers) != 1 || answers[0].By != tc.by {
				t.Errorf("answers in approvals.jsonl: %+v", answers)
			}
			if n := ar.count(event.ApprovalAnswered); n != 1 {
				t.Errorf("%d approval.answered events, want 1", n)
			}
			if s := ar.summary(t); s.Status != runrecord.Finished || len(s.Pending) != 0 {
				t.Errorf("run.json at the end: %s, pending %+v", s.Status, s.Pending)
			}
		})
	}
}

// TestRemoteApprovalFirstOncePerRun: approve: first is per run, not per
// worker: the first call, on worker wa, is asked; the second, on worker
// wb (another agent partition), runs without asking.
func TestRemoteApprovalFirstOncePerRun(t *testing.T) {
	t.Parallel()
	wf, skills, log := approvalProject(t, spec.ApproveFirst, `  - {id: one, assignee: ops/a, goal: go}
  - {id: two, assignee: ops/b, goal: go, deps: [one]}
`)
	f := newFixture(t, wf)
	f.startWorker(t, WorkerOptions{Work: engine.Work, Name: "wa", Agents: "ops.a", Trust: []string{skills}})
	f.startWorker(t, WorkerOptions{Work: engine.Work, Name: "wb", Agents: "ops.b", Trust: []string{skills}})
	ar := f.start(t, wf, engine.Options{})
	e := ar.next(t)
	if e.Task != "one" {
		t.Errorf("asked about %+v, want task one's call", e)
	}
	must(t, ar.r.Answer(runrecord.Answer{Call: e.Approval, By: "test"}))
	ar.wait(t)
	if got := strings.Join(logLines(t, log), "|"); got != "task:one/s1/c1 1|task:two/s1/c1 1" {
		t.Errorf("the command ran %q", got)
	}
	if n := ar.count(event.ApprovalRequested); n != 1 {
		t.Errorf("%d approval requests, want 1", n)
	}
}

// TestRemoteApprovalAnsweredOnceAcrossRedelivery: a worker asks, gets the
// answer and starts the call, then stops before the call's result is
// journaled; the task goes to another worker, which resumes it, meets the
// same call (same FSD_CALL_ID) in doubt and gets the answer given to the
// first worker without anyone being asked again. With on-interrupt: retry
// (the default) it runs the call again; with on-interrupt: fail it does
// not, and the model reads "outcome unknown" — which a call taken for
// fresh (one the first worker certainly did not start) would not.
func TestRemoteApprovalAnsweredOnceAcrossRedelivery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		onInterrupt spec.OnInterrupt
		ran, read   string
	}{
		{spec.OnInterruptRetry, "task:deploy/s1/c1 1|task:deploy/s1/c1 1", "a read: did 1"},
		{spec.OnInterruptFail, "task:deploy/s1/c1 1", "a read: " + journal.OutcomeUnknown},
	} {
		t.Run(string(tc.onInterrupt), func(t *testing.T) {
			wf, skills, log := approvalProject(t, spec.ApproveAlways, "  - {id: deploy, assignee: ops/a, goal: deploy}\n")
			setOnInterrupt(t, skills, tc.onInterrupt)
			must(t, os.WriteFile(log+".hang", nil, 0o644))
			f := newFixture(t, wf)
			stopFirst := f.startWorker(t, WorkerOptions{Work: engine.Work, Name: "first", Concurrency: 1, Trust: []string{skills}})
			ar := f.start(t, wf, engine.Options{})
			e := ar.next(t)
			must(t, ar.r.Answer(runrecord.Answer{Call: e.Approval, By: "test"}))
			until(t, "the first worker to start the call", func() bool { return len(logLines(t, log)) == 1 })
			f.startWorker(t, WorkerOptions{Work: engine.Work, Name: "second", Concurrency: 1, Trust: []string{skills}})
			stopFirst() // kills the hanging call and hands the task back to the queue
			ar.wait(t)
			if got := strings.Join(logLines(t, log), "|"); got != tc.ran {
				t.Errorf("the command ran %q; want %q (the same call id on each run)", got, tc.ran)
			}
			if n := ar.count(event.ApprovalRequested); n != 1 {
				t.Errorf("%d approval requests, want 1", n)
			}
			kinds, _ := approvalLines(t, filepath.Join(ar.runsDir, ar.r.ID))
			if strings.Join(kinds, ",") != "requested task:deploy/s1/c1,answered task:deploy/s1/c1" {
				t.Errorf("approvals.jsonl: %q", kinds)
			}
			if got := ar.res.Answer; !strings.Contains(got, tc.read) {
				t.Errorf("answer %q; want it to contain %q", got, tc.read)
			}
		})
	}
}

// setOnInterrupt gives approvalProject's command tool the policy p.
func setOnInterrupt(t *testing.T, skills string, p spec.OnInterrupt) {
	t.Helper()
	manifest := filepath.Join(skills, "ops", "ops.skill.yaml")
	b, err := os.ReadFile(manifest)
	must(t, err)
	must(t, os.WriteFile(manifest, []byte(strings.Replace(string(b), "'{{.n}}']}", "'{{.n}}'], on-interrupt: "+string(p)+"}", 1)), 0o644))
}

// TestRemoteApprovalAnswerAfterHandBack: a worker asks and, while the
// call waits, is stopped (SIGTERM hands the task back); another worker
// takes the task over and asks again; then the call is approved. The
// coordinator's handler of the stopped worker's request is answered too,
// but its reply reaches no one: the call certainly did not run, so it
// runs once — even with on-interrupt: fail, where a call in doubt would
// read "outcome unknown" — and nobody is asked twice.
func TestRemoteApprovalAnswerAfterHandBack(t *testing.T) {
	t.Parallel()
	wf, skills, log := approvalProject(t, spec.ApproveAlways, "  - {id: deploy, assignee: ops/a, goal: deploy}\n")
	setOnInterrupt(t, skills, spec.OnInterruptFail)
	f := newFixture(t, wf)
	stopFirst := f.startWorker(t, WorkerOptions{Work: engine.Work, Name: "first", Concurrency: 1, Trust: []string{skills}})
	ar := f.start(t, wf, engine.Options{})
	e := ar.next(t)
	// The requests on the attempt's approvals subject, as the coordinator
	// sees them.
	requests := make(chan struct{}, 64)
	sub, err := f.c.res.nc.Subscribe(approvalsSubject(ar.r.ID, "deploy", 1), func(*nats.Msg) {
		select {
		case requests <- struct{}{}:
		default:
		}
	})
	must(t, err)
	defer func() { _ = sub.Unsubscribe() }()
	must(t, f.c.res.nc.Flush())
	stopFirst() // hands the task back while its last request is held
	for len(requests) > 0 {
		<-requests
	}
	f.startWorker(t, WorkerOptions{Work: engine.Work, Name: "second", Concurrency: 1, Trust: []string{skills}})
	select {
	case <-requests: // the second worker asks
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		t.Fatal("the second worker did not ask")
	}
	must(t, ar.r.Answer(runrecord.Answer{Call: e.Approval, By: "test"}))
	ar.wait(t)
	if got := strings.Join(logLines(t, log), "|"); got != "task:deploy/s1/c1 1" {
		t.Errorf("the command ran %q, want once", got)
	}
	if got := ar.results("effect"); len(got) != 1 || got[0] != "did 1" {
		t.Errorf("the model read %q, want the call's result", got)
	}
	if n := ar.count(event.ApprovalRequested); n != 1 {
		t.Errorf("%d approval requests, want 1", n)
	}
}

// TestRemoteApprovalCoordinatorDown: no coordinator answers a worker's
// request (it is down): the worker keeps the task (heartbeats: a message
// delivered at most once is not delivered again) and asks again until
// the approval timeout, then the call is rejected — not run — with a
// reason the model reads.
func TestRemoteApprovalCoordinatorDown(t *testing.T) {
	testlong.Skip(t)
	wf, skills, log := approvalProject(t, spec.ApproveAlways, "  - {id: deploy, assignee: ops/a, goal: deploy}\n")
	f := newFixture(t, wf)
	var read string
	var mu sync.Mutex
	reader := func(string, string) (model.Model, error) {
		return model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
			if last, ok := lastToolResult(req); ok {
				mu.Lock()
				read = last.Text
				mu.Unlock()
				return &model.Response{Text: "done"}, nil
			}
			return &model.Response{Calls: []model.ToolCall{{ID: "x", Name: "effect", Args: json.RawMessage(`{"n":1}`)}}}, nil
		}), nil
	}
	// The approval wait (3s) outlasts the ack wait (1s) a few times over:
	// without heartbeats the message would be delivered again.
	f.startWorker(t, WorkerOptions{Work: engine.Work, Name: "w", Trust: []string{skills}, Model: reader, AckWait: time.Second})
	// The task message a coordinator would send, published by hand: no
	// coordinator listens on its approvals subject.
	ref := f.c.skills["ops"]
	m := Message{V: WireVersion, Attempt: work.Attempt{Run: "r-down", Task: "deploy", Number: 1, Goal: "deploy",
		Skill: "ops", Agent: "a", Assignee: "ops/a", Limits: work.Limits{MaxSteps: 5, MaxTranscriptMessages: 60},
		ApprovalTimeout: 3 * time.Second},
		Bundle: ref.bundle, Manifest: ref.manifest, Events: eventsSubject("r-down", "deploy", 1),
		Approvals: approvalsSubject("r-down", "deploy", 1), MaxDeliveries: 1}
	data, err := json.Marshal(m)
	must(t, err)
	ctx := context.Background()
	_, err = f.c.res.js.Publish(ctx, taskSubject("ops", "a"), data, jetstream.WithMsgID(m.Key()))
	must(t, err)
	var out Outcome
	until(t, "the task's outcome", func() bool {
		e, err := f.c.res.results.Get(ctx, m.Key())
		if err != nil {
			return false
		}
		must(t, json.Unmarshal(e.Value(), &out))
		return true
	})
	if out.Error != "" {
		t.Fatalf("the task failed: %s (a redelivery means the wait stopped heartbeating)", out.Error)
	}
	if got := logLines(t, log); got != nil {
		t.Errorf("the call ran without an answer: %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(read, "The call was not run: the approver rejected it (no answer within 3s: the run's coordinator (fsd run --nats) could not be reached") {
		t.Errorf("the model read %q", read)
	}
}

func lastToolResult(req *model.Request) (model.Message, bool) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == model.Tool {
			return req.Messages[i], true
		}
	}
	return model.Message{}, false
}

// TestRemoteApprovalCoordinatorRestart: the coordinator (fsd run) is
// killed while a worker's call waits for approval; fsd approve answers
// the stopped run; fsd resume serves the worker, which was asking all
// along, and the call runs once, with the answer's arguments.
func TestRemoteApprovalCoordinatorRestart(t *testing.T) {
	testlong.Skip(t)
	srv := runServer(t)
	wf, skills, log := approvalProject(t, spec.ApproveAlways, "  - {id: deploy, assignee: ops/a, goal: deploy}\n")
	dir := filepath.Dir(wf)
	worker(t, srv.ClientURL(), "w1", "--trust", skills)
	runs := filepath.Join(dir, "runs")
	run := start(t, dir, nil, "run", wf, "--nats", srv.ClientURL(), "--runs-dir", runs)
	var rec string
	until(t, "the worker's call to wait for approval", func() bool {
		ents, _ := os.ReadDir(runs)
		if len(ents) != 1 {
			return false
		}
		rec = filepath.Join(runs, ents[0].Name())
		b, err := os.ReadFile(filepath.Join(rec, runrecord.RunFile))
		var s runrecord.Summary
		return err == nil && json.Unmarshal(b, &s) == nil && s.Status == runrecord.Waiting
	})
	run.kill()
	if out, err := exec.Command(fsdBin, "approve", runID(rec), "task:deploy/s1/c1", "--edit", `{"n": 3}`, "--runs-dir", runs).CombinedOutput(); err != nil {
		t.Fatalf("fsd approve: %v\n%s", err, out)
	}
	if got := logLines(t, log); got != nil {
		t.Fatalf("ran while no coordinator was up: %q", got)
	}
	start(t, dir, nil, "resume", runID(rec), "--runs-dir", runs).wait(t)
	if got := strings.Join(logLines(t, log), "|"); got != "task:deploy/s1/c1 3" {
		t.Errorf("the command ran %q, want once with the edited arguments", got)
	}
	kinds, answers := approvalLines(t, rec)
	if strings.Join(kinds, ",") != "requested task:deploy/s1/c1,answered task:deploy/s1/c1" || answers[0].By != "fsd approve" {
		t.Errorf("approvals.jsonl: %q %+v", kinds, answers)
	}
}

// TestUntrustedCallNotAskedForApproval: a call that needs approval but
// that its worker will refuse to run (it does not trust the skill) is not
// put to a person: approving it ran nothing and the model read the
// refusal all the same. It answers the refusal at once.
func TestUntrustedCallNotAskedForApproval(t *testing.T) {
	t.Parallel()
	wf, _, log := approvalProject(t, spec.ApproveAlways, "  - {id: deploy, assignee: ops/a, goal: deploy}\n")
	f := newFixture(t, wf)
	f.startWorker(t, WorkerOptions{Work: engine.Work, Name: "w1", Concurrency: 1})
	ar := f.start(t, wf, engine.Options{})
	ar.wait(t)
	if n := ar.count(event.ApprovalRequested); n != 0 {
		t.Errorf("%d approval requests for a call the worker refuses", n)
	}
	if got := ar.results("effect"); len(got) != 1 || !strings.Contains(got[0], "worker w1 does not trust this skill to run commands") {
		t.Errorf("the model read %q; want the worker's refusal", got)
	}
	if got := logLines(t, log); got != nil {
		t.Errorf("the command ran: %q", got)
	}
}
