package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/work"
)

// approvalSkill is a skill "ops" whose command tool "effect" appends
// "CALL_ID n" to log when it runs and answers "did n".
func approvalSkill(log string, approve spec.Approve) *spec.Skill {
	s := skill("ops", "1.0.0", spec.ChannelInline)
	s.Tools = append(s.Tools, spec.Tool{Name: "effect", Approve: approve,
		Input: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}},
		Run: spec.ToolRun{Kind: spec.RunCommand,
			Command: []string{"sh", "-c", `echo "$FSD_CALL_ID $2" >> "$1"; printf "did %s" "$2"`, "effect", log, "{{.n}}"}}})
	return s
}

// ranLines is what the effect tool logged, one "CALL_ID n" a line.
func ranLines(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// answering runs p and answers each approval request with the next of
// answers (in the order they come), checking run.json while each waits.
// It returns the events and the model's requests.
type approvalRun struct {
	res    *Result
	err    error
	events []event.Event
	model  *recModel
	// waiting is run.json as read while each call waited.
	waiting []runrecord.Summary
}

func runAnswering(t *testing.T, p *spec.Project, opts Options, answers []runrecord.Answer, steps ...step) approvalRun {
	t.Helper()
	m := &recModel{steps: steps}
	rec := &event.Recorder{}
	requested := make(chan event.Event, 16)
	opts.Model = m
	opts.Sink = event.Multi{rec, event.SinkFunc(func(e event.Event) {
		if e.Type == event.ApprovalRequested {
			requested <- e
		}
	})}
	if opts.RunsDir == "" {
		opts.RunsDir = t.TempDir()
	}
	r, err := New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan approvalRun, 1)
	go func() {
		res, err := r.Execute(context.Background(), "")
		done <- approvalRun{res: res, err: err}
	}()
	var waiting []runrecord.Summary
	for _, a := range answers {
		var e event.Event
		select {
		case e = <-requested:
		case out := <-done:
			t.Fatalf("the run ended (%v) before asking for approval %d", out.err, len(waiting)+1)
		case <-time.After(20 * time.Second): // a hang guard, not a timing assertion
			t.Fatal("no approval was requested")
		}
		var sum runrecord.Summary
		b := readFile(t, filepath.Join(opts.RunsDir, r.ID, "run.json"))
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		waiting = append(waiting, sum)
		a.Call = e.Approval
		if err := r.Answer(a); err != nil {
			t.Fatal(err)
		}
	}
	out := <-done
	out.events, out.model, out.waiting = rec.Events(), m, waiting
	select {
	case e := <-requested:
		t.Fatalf("an approval was requested beyond the answers given: %+v", e)
	default:
	}
	return out
}

func ofType(evs []event.Event, typ string) []event.Event {
	var out []event.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// Approve, edit and reject a call of an approve: always command tool.
func TestApprovalApproveEditReject(t *testing.T) {
	testpar.UnlessRace(t)
	for _, tc := range []struct {
		name   string
		answer runrecord.Answer
		ran    []string // what the command logged
		result string   // what the model read
		isErr  bool
	}{
		{"approve", runrecord.Answer{Decision: runrecord.Approved, By: "test"}, []string{"host/s2/c1 1"}, "did 1", false},
		{"edit", runrecord.Answer{Decision: runrecord.Edited, Args: json.RawMessage(`{"n":7}`), By: "test"}, []string{"host/s2/c1 7"},
			"[the approver edited the arguments to {\"n\":7}]\ndid 7", false},
		{"reject", runrecord.Answer{Decision: runrecord.Rejected, Reason: "not on a Friday", By: "test"}, nil,
			"The call was not run: the approver rejected it (not on a Friday).", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "calls.log")
			p := writable(project(approvalSkill(log, spec.ApproveAlways)), filepath.Dir(log))
			out := runAnswering(t, p, Options{}, []runrecord.Answer{tc.answer}, read("ops"), call("effect", map[string]int{"n": 1}), say("done"))
			if out.err != nil {
				t.Fatal(out.err)
			}
			if got := ranLines(t, log); strings.Join(got, "|") != strings.Join(tc.ran, "|") {
				t.Errorf("the command ran %q, want %q", got, tc.ran)
			}
			reqs := out.model.requests()
			res := lastResult(reqs[len(reqs)-1])
			if res.Text != tc.result || res.IsError != tc.isErr {
				t.Errorf("the model read %q (error %v), want %q (error %v)", res.Text, res.IsError, tc.result, tc.isErr)
			}
			// While it waited, run.json said so and named the call.
			w := out.waiting[0]
			var args bytes.Buffer
			if len(w.Pending) == 1 {
				_ = json.Compact(&args, w.Pending[0].Args)
			}
			if w.Status != runrecord.Waiting || len(w.Pending) != 1 || w.Pending[0].Call != "host/s2/c1" || w.Pending[0].Tool != "effect" ||
				args.String() != `{"n":1}` {
				t.Errorf("run.json while waiting: status %q, pending %+v", w.Status, w.Pending)
			}
			// Both ends are events, and the answer is journaled.
			req, ans := ofType(out.events, event.ApprovalRequested), ofType(out.events, event.ApprovalAnswered)
			if len(req) != 1 || len(ans) != 1 || ans[0].Status != tc.answer.Decision || ans[0].Approval != "host/s2/c1" || ans[0].Reason != tc.answer.Reason {
				t.Fatalf("approval events: %+v %+v", req, ans)
			}
			lines := readFile(t, filepath.Join(out.res.Dir, runrecord.ApprovalsFile))
			if n := strings.Count(string(lines), `"kind":"answered"`); n != 1 || !strings.Contains(string(lines), `"decision":"`+tc.answer.Decision+`"`) {
				t.Errorf("approvals.jsonl: %s", lines)
			}
			var sum runrecord.Summary
			if err := json.Unmarshal(readFile(t, filepath.Join(out.res.Dir, "run.json")), &sum); err != nil {
				t.Fatal(err)
			}
			if sum.Status != runrecord.Finished || len(sum.Pending) != 0 {
				t.Errorf("run.json at the end: %s, pending %v", sum.Status, sum.Pending)
			}
		})
	}
}

// approve: first asks until one call of the tool is approved; later calls
// run at once. A rejected first call does not count.
func TestApprovalFirst(t *testing.T) {
	testpar.UnlessRace(t)
	log := filepath.Join(t.TempDir(), "calls.log")
	p := writable(project(approvalSkill(log, spec.ApproveFirst)), filepath.Dir(log))
	out := runAnswering(t, p, Options{},
		[]runrecord.Answer{{Decision: runrecord.Rejected, Reason: "try again"}, {Decision: runrecord.Approved}},
		read("ops"), call("effect", map[string]int{"n": 1}), call("effect", map[string]int{"n": 2}),
		call("effect", map[string]int{"n": 3}), say("done"))
	if out.err != nil {
		t.Fatal(out.err)
	}
	if got := ranLines(t, log); strings.Join(got, "|") != "host/s3/c1 2|host/s4/c1 3" {
		t.Errorf("ran %q", got)
	}
	if n := len(ofType(out.events, event.ApprovalRequested)); n != 2 {
		t.Errorf("%d approvals asked, want 2", n)
	}
}

// The skill's and the workflow's approve reach a command tool that sets
// none; --approve auto answers for a person, deny rejects.
func TestApprovalModes(t *testing.T) {
	testpar.UnlessRace(t)
	for _, tc := range []struct {
		name      string
		mode      approval.Mode
		wfDefault spec.Approve
		ran       bool
		by        string
	}{
		{"auto", approval.Auto, spec.ApproveAlways, true, "auto"},
		{"deny", approval.Deny, spec.ApproveAlways, false, "deny"},
		{"default never", approval.Deny, "", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "calls.log")
			p := writable(project(approvalSkill(log, "")), filepath.Dir(log))
			p.Workflow.Approve = tc.wfDefault
			_, m, evs, err := runWith(t, p, Options{Approve: tc.mode, RunsDir: t.TempDir()}, read("ops"), call("effect", map[string]int{"n": 1}), say("done"))
			if err != nil {
				t.Fatal(err)
			}
			if ran := len(ranLines(t, log)) == 1; ran != tc.ran {
				t.Errorf("ran = %v, want %v", ran, tc.ran)
			}
			if n := len(ofType(evs, event.ApprovalRequested)); n != 0 {
				t.Errorf("%d approvals were asked of a person", n)
			}
			ans := ofType(evs, event.ApprovalAnswered)
			if tc.by == "" {
				if len(ans) != 0 {
					t.Errorf("answered %+v", ans)
				}
				return
			}
			if len(ans) != 1 || ans[0].By != tc.by {
				t.Fatalf("answers %+v", ans)
			}
			if res := lastResult(m.requests()[2]); res.IsError == tc.ran {
				t.Errorf("the model read %q", res.Text)
			}
		})
	}
}

// The approval timeout fails the call softly: the model reads that no
// answer came, nothing runs, the run goes on.
func TestApprovalTimeout(t *testing.T) {
	testpar.UnlessRace(t)
	log := filepath.Join(t.TempDir(), "calls.log")
	p := writable(project(approvalSkill(log, spec.ApproveAlways)), filepath.Dir(log))
	_, m, evs, err := runWith(t, p, Options{ApprovalTimeout: time.Millisecond, RunsDir: t.TempDir()},
		read("ops"), call("effect", map[string]int{"n": 1}), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ranLines(t, log); got != nil {
		t.Errorf("ran %q", got)
	}
	res := lastResult(m.requests()[2])
	if !res.IsError || !strings.Contains(res.Text, "no answer within 1ms") {
		t.Errorf("the model read %q", res.Text)
	}
	if ans := ofType(evs, event.ApprovalAnswered); len(ans) != 1 || ans[0].By != "timeout" {
		t.Errorf("answers %+v", ans)
	}
}

// A run stopped while a call waits for approval keeps it pending: run.json
// lists it, nothing ran. The resumed run asks again (the in-doubt rule
// does not run an unapproved call), and once approved the call runs
// exactly once. An answer written while the run is stopped (fsd approve)
// is taken at resume without asking.
func TestApprovalStoppedWhileWaiting(t *testing.T) {
	for _, answerWhileStopped := range []bool{false, true} {
		name := "answered after resume"
		if answerWhileStopped {
			name = "answered while stopped"
		}
		t.Run(name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "calls.log")
			s := approvalSkill(log, spec.ApproveAlways)
			// Not even the strictest in-doubt rule may keep an approved
			// call that never ran from running.
			s.Tools[len(s.Tools)-1].Run.OnInterrupt = spec.OnInterruptFail
			p := writable(project(s), filepath.Dir(log))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sink := event.SinkFunc(func(e event.Event) {
				if e.Type == event.ApprovalRequested {
					cancel() // Ctrl-C while it waits
				}
			})
			m := &recModel{steps: []step{read("ops"), call("effect", map[string]int{"n": 1})}}
			r, err := New(p, Options{Model: m, Sink: sink, RunsDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Execute(ctx, "")
			if !errors.Is(err, ErrInterrupted) {
				t.Fatalf("first run: %v", err)
			}
			var sum runrecord.Summary
			if err := json.Unmarshal(readFile(t, filepath.Join(res.Dir, "run.json")), &sum); err != nil {
				t.Fatal(err)
			}
			if sum.Status != runrecord.Interrupted || len(sum.Pending) != 1 || sum.Pending[0].Call != "host/s2/c1" {
				t.Fatalf("run.json after the stop: %s, pending %+v", sum.Status, sum.Pending)
			}
			if got := ranLines(t, log); got != nil {
				t.Fatalf("an unapproved call ran: %q", got)
			}
			if answerWhileStopped {
				if _, err := runrecord.WriteAnswer(res.Dir, userKey(t), runrecord.Answer{Call: "host/s2/c1", Decision: runrecord.Approved, By: "fsd approve", Time: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}

			m2 := &recModel{steps: []step{say("done")}}
			r2, asked, done := resumeAsking(t, p, res.Dir, m2)
			if !answerWhileStopped {
				select {
				case call := <-asked:
					if call != "host/s2/c1" {
						t.Errorf("asked about %q", call)
					}
					if got := ranLines(t, log); got != nil {
						t.Errorf("the call ran before it was approved: %q", got)
					}
					if err := r2.Answer(runrecord.Answer{Call: call, Decision: runrecord.Approved}); err != nil {
						t.Fatal(err)
					}
				case err := <-done:
					t.Fatalf("the resumed run ended (%v) without asking again", err)
				case <-time.After(20 * time.Second): // hang guard
					t.Fatal("the resumed run did not ask again")
				}
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if answerWhileStopped && len(asked) != 0 {
				t.Errorf("asked again for a call answered while the run was stopped")
			}
			if got := ranLines(t, log); strings.Join(got, "|") != "host/s2/c1 1" {
				t.Errorf("ran %q, want the call exactly once", got)
			}
			// Nothing the first run's model answered was asked again.
			if n := len(m2.requests()); n != 1 {
				t.Errorf("%d model calls on resume, want 1", n)
			}
			sum = runrecord.Summary{}
			if err := json.Unmarshal(readFile(t, filepath.Join(res.Dir, "run.json")), &sum); err != nil {
				t.Fatal(err)
			}
			if sum.Status != runrecord.Finished || len(sum.Pending) != 0 {
				t.Errorf("run.json at the end: %s, pending %v", sum.Status, sum.Pending)
			}
		})
	}
}

// A call approved, taken and then cut off by a crash is in doubt like any
// other: the resume applies its on-interrupt (here: fail) and asks nothing
// again — the answer on record stands.
func TestApprovalTakenThenInDoubt(t *testing.T) {
	log := filepath.Join(t.TempDir(), "calls.log")
	s := approvalSkill(log, spec.ApproveAlways)
	s.Tools[len(s.Tools)-1].Run.OnInterrupt = spec.OnInterruptFail
	p := writable(project(s), filepath.Dir(log))
	r, err := New(p, Options{Model: crashAfter(read("ops"), call("effect", map[string]int{"n": 1})), RunsDir: t.TempDir(), Approve: approval.Auto})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), "")
	if !errors.Is(err, errCrash) {
		t.Fatalf("first run: %v", err)
	}
	// Cut the call's result from the journal: it was running at the crash.
	tr := filepath.Join(res.Dir, "journal.jsonl")
	b := readFile(t, tr)
	last := bytes.LastIndexByte(b[:len(b)-1], '\n')
	if !bytes.Contains(b[last:], []byte(`"role":"tool"`)) {
		t.Fatalf("the journal's last line is not a result: %s", b[last:])
	}
	if err := os.WriteFile(tr, b[:last+1], 0o644); err != nil {
		t.Fatal(err)
	}
	var got model.Message
	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		got = lastResult(req)
		return &model.Response{Text: "done"}, nil
	})
	// Ask mode: if the resume asked again, nobody would answer.
	_, evs, err := resume(t, p, res.Dir, m, Options{ApprovalTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "outcome unknown: interrupted while running" {
		t.Errorf("the model read %q", got.Text)
	}
	if n := len(ofType(evs, event.ApprovalRequested)); n != 0 {
		t.Errorf("asked again for a call approved before the crash")
	}
	if ran := ranLines(t, log); len(ran) != 1 {
		t.Errorf("ran %q, want once (before the crash)", ran)
	}
}

// A task waiting for approval holds no concurrency slot: with concurrency
// 1 the other tasks run to the end while it waits.
func TestApprovalOtherTasksContinue(t *testing.T) {
	testpar.UnlessRace(t)
	log := filepath.Join(t.TempDir(), "calls.log")
	s := approvalSkill(log, spec.ApproveAlways)
	s.Agents = []spec.Agent{{Name: "runner", Prompt: "Run it.", Tools: []string{"effect"}, Visibility: spec.VisibilitySub}}
	p := writable(project(s), filepath.Dir(log))
	p.Workflow.Host = nil
	p.Workflow.Limits.Concurrency = 1
	p.Workflow.Tasks = []spec.Task{{ID: "deploy", Goal: "ship", Assignee: "ops/runner"}, {ID: "b", Goal: "g"}, {ID: "c", Goal: "g"}}
	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.TaskID == "deploy" && lastResult(req).Text == "" {
			return &model.Response{Calls: []model.ToolCall{{ID: "x", Name: "effect", Args: json.RawMessage(`{"n":1}`)}}}, nil
		}
		return &model.Response{Text: "done " + req.Caller.TaskID}, nil
	})
	asked := make(chan string, 1)
	completed := make(chan string, 8)
	sink := event.SinkFunc(func(e event.Event) {
		switch e.Type {
		case event.ApprovalRequested:
			asked <- e.Approval
		case event.TaskCompleted:
			completed <- e.Task
		}
	})
	r, err := New(p, Options{Model: m, Sink: sink, RunsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Execute(context.Background(), "")
		done <- err
	}()
	hang := time.After(20 * time.Second) // a hang guard, not a timing assertion
	var call string
	select {
	case call = <-asked:
	case <-hang:
		t.Fatal("no approval asked")
	}
	for range 2 {
		select {
		case id := <-completed:
			if id == "deploy" {
				t.Fatal("deploy completed before its call was answered")
			}
		case <-hang:
			t.Fatal("the other tasks did not run while deploy waited for approval (does the waiting task hold its slot?)")
		}
	}
	if call != "task:deploy/s1/c1" {
		t.Errorf("pending call %q", call)
	}
	if got := r.Pending(); len(got) != 1 || got[0].Task != "deploy" || got[0].Agent != "ops/runner" {
		t.Errorf("Pending() = %+v", got)
	}
	if err := r.Answer(runrecord.Answer{Call: call, Decision: runrecord.Approved}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := ranLines(t, log); strings.Join(got, "|") != "task:deploy/s1/c1 1" {
		t.Errorf("ran %q", got)
	}
}

// A task run by Work without an work.Approver (no coordinator to ask): a call
// that needs approval is rejected there, never run, and the model reads
// why.
func TestApprovalRemoteWorkerRejects(t *testing.T) {
	testpar.UnlessRace(t)
	log := filepath.Join(t.TempDir(), "calls.log")
	s := approvalSkill(log, spec.ApproveAlways)
	s.Agents = []spec.Agent{{Name: "runner", Prompt: "Run it.", Tools: []string{"effect"}, Visibility: spec.VisibilitySub}}
	var read string
	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if res := lastResult(req); res.Role == model.Tool {
			read = res.Text
			return &model.Response{Text: "done"}, nil
		}
		return &model.Response{Calls: []model.ToolCall{{ID: "x", Name: "effect", Args: json.RawMessage(`{"n":1}`)}}}, nil
	})
	rec := &event.Recorder{}
	res := Work(context.Background(), &work.Attempt{Run: "r1", Task: "deploy", Number: 1, Goal: "ship", Skill: "ops", Agent: "runner",
		Assignee: "ops/runner", Limits: work.Limits{MaxSteps: 5, MaxTranscriptMessages: 60}}, work.Options{Model: m, Skill: s, Sink: rec})
	if res.Error != "" {
		t.Fatal(res.Error)
	}
	if got := ranLines(t, log); got != nil {
		t.Errorf("a call that needs approval ran on a remote worker: %q", got)
	}
	if !strings.Contains(read, "this worker has no coordinator to ask") {
		t.Errorf("the model read %q", read)
	}
	if ans := ofType(rec.Events(), event.ApprovalAnswered); len(ans) != 1 || ans[0].Status != runrecord.Rejected {
		t.Errorf("answers %+v", ans)
	}
}

// TestApprovalAnswerFileNotFsds: a file in the run's approvals/ folder
// that fsd did not write — a forged answer (no seal), a symlink to one
// fsd wrote for another call, a FIFO — answers nothing. The run stops
// with an error naming the file, at once (a FIFO is not waited on), and
// the call never runs.
func TestApprovalAnswerFileNotFsds(t *testing.T) {
	testpar.UnlessRace(t)
	forged := []byte(`{"call":"host/s2/c1","decision":"edited","args":{"n":99},"by":"fsd approve","time":"2026-01-01T00:00:00Z"}`)
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, path string)
	}{
		{"forged", func(t *testing.T, path string) {
			if err := os.WriteFile(path, forged, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink", func(t *testing.T, path string) {
			other := filepath.Join(t.TempDir(), "answer.json")
			if err := os.WriteFile(other, forged, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"fifo", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "calls.log")
			p := writable(project(approvalSkill(log, spec.ApproveAlways)), filepath.Dir(log))
			requested := make(chan string, 1)
			r, err := New(p, Options{Model: &recModel{steps: []step{read("ops"), call("effect", map[string]int{"n": 1}), say("done")}},
				RunsDir: t.TempDir(), Sink: event.SinkFunc(func(e event.Event) {
					if e.Type == event.ApprovalRequested {
						requested <- e.Approval
					}
				})})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := r.Execute(context.Background(), "")
				done <- err
			}()
			var path string
			select {
			case call := <-requested:
				path = runrecord.AnswerPath(filepath.Join(r.opts.RunsDir, r.ID), call)
			case err := <-done:
				t.Fatalf("the run ended (%v) before asking for approval", err)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			tc.plant(t, path)
			select {
			case err = <-done:
			case <-time.After(20 * time.Second): // a hang guard, not a timing assertion
				t.Fatalf("the run hung on the planted %s", tc.name)
			}
			if err == nil || !strings.Contains(err.Error(), filepath.Base(path)) {
				t.Errorf("the run ended with %v; want an error naming %s", err, filepath.Base(path))
			}
			if got := ranLines(t, log); got != nil {
				t.Errorf("a call nobody approved ran: %q", got)
			}
		})
	}
}

// A rejection does not count as the approve: first approval across a
// stop either: a run whose first call of the tool was rejected, resumed,
// asks again for the next call of it.
func TestApprovalFirstRejectedThenResumed(t *testing.T) {
	log := filepath.Join(t.TempDir(), "calls.log")
	p := writable(project(approvalSkill(log, spec.ApproveFirst)), filepath.Dir(log))
	r, err := New(p, Options{Model: crashAfter(read("ops"), call("effect", map[string]int{"n": 1})), RunsDir: t.TempDir(), Approve: approval.Deny})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), "")
	if !errors.Is(err, errCrash) {
		t.Fatalf("first run: %v", err)
	}
	if ran := ranLines(t, log); ran != nil {
		t.Fatalf("the rejected call ran: %q", ran)
	}

	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.Step == 2 {
			return call("effect", map[string]int{"n": 2})(req), nil
		}
		return &model.Response{Text: "done"}, nil
	})
	r2, asked, done := resumeAsking(t, p, res.Dir, m)
	select {
	case c := <-asked:
		if c != "host/s3/c1" {
			t.Errorf("asked about %q, want host/s3/c1", c)
		}
		if err := r2.Answer(runrecord.Answer{Call: c, Decision: runrecord.Approved}); err != nil {
			t.Fatal(err)
		}
	case err := <-done:
		t.Fatalf("the resumed run ended (%v) without asking about the tool's next call", err)
	case <-time.After(20 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("the resumed run did not ask")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := ranLines(t, log); strings.Join(got, "|") != "host/s3/c1 2" {
		t.Errorf("ran %q, want the approved call only", got)
	}
}

// resumeAsking resumes the run recorded in dir with m, in the background:
// asked carries the calls it asks approval for, done its end.
func resumeAsking(t *testing.T, p *spec.Project, dir string, m model.Model) (r *Run, asked chan string, done chan error) {
	t.Helper()
	j, err := LoadReplay(dir)
	if err != nil {
		t.Fatal(err)
	}
	asked, done = make(chan string, 4), make(chan error, 1)
	r, err = New(p, Options{Model: m, Resume: j, Sink: event.SinkFunc(func(e event.Event) {
		if e.Type == event.ApprovalRequested {
			asked <- e.Approval
		}
	})})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := r.Execute(context.Background(), "")
		done <- err
	}()
	return r, asked, done
}
