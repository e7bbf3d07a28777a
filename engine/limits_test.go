package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tool"
)

// Each limit a run can reach states itself in words the model or the user
// can act on. Manifest limits (file size, YAML depth, alias expansion,
// static task caps) stop a run before it starts and are tested at the CLI
// (cmd/fsd/limits_test.go) and in spec; these are the limits of a run.

// funcRun runs p with a model.Func and returns the result, the events and
// the error.
func funcRun(t *testing.T, ctx context.Context, p *spec.Project, opts Options, f model.Func) (*Result, []event.Event, error) {
	t.Helper()
	rec := &event.Recorder{}
	opts.Model, opts.Sink = f, rec
	opts.Rand = rand.NewChaCha8([32]byte{7})
	r, err := New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(ctx, "")
	return res, rec.Events(), err
}

// scriptFunc answers the host's steps in order and every worker with
// worker(req).
func scriptFunc(host []step, worker step) model.Func {
	return func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.Agent != "" || req.Caller.TaskID != "" {
			if worker == nil {
				return nil, errors.New("test model: no worker steps")
			}
			return worker(req), nil
		}
		if req.Caller.Step >= len(host) {
			return nil, fmt.Errorf("test model: no host step %d", req.Caller.Step+1)
		}
		return host[req.Caller.Step](req), nil
	}
}

// results lists the text of every tool.result event of a tool, in order.
func results(evs []event.Event, name string) []event.Event {
	var out []event.Event
	for _, e := range evs {
		if e.Type == event.ToolResult && e.Tool == name {
			out = append(out, e)
		}
	}
	return out
}

// Tool output: stdout past 1 MiB is cut and says so; the call is not an error.
func TestLimitToolOutput(t *testing.T) {
	testpar.UnlessRace(t)
	s := skill("ops", "1.0.0", spec.ChannelInline)
	s.Dir = t.TempDir()
	s.Tools = append(s.Tools, cmdTool("flood", 0, "head", "-c", "3000000", "/dev/zero"))
	var got model.Message // the flood result as the model reads it
	host := scriptFunc([]step{read("ops"), call("flood", nil), say("ok")}, nil)
	p := project(s)
	p.Workflow.Limits.MaxResultTokens = 1 << 30 // whole in the window: the tool's cut is tested here
	_, _, err := funcRun(t, context.Background(), p, Options{}, func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.Step == 2 {
			got = lastResult(req)
		}
		return host(ctx, req)
	})
	if err != nil {
		t.Fatal(err)
	}
	const tail = "\n[output truncated at 1 MiB]"
	if got.IsError || !strings.HasSuffix(got.Text, tail) || len(got.Text) != tool.MaxOutputBytes+len(tail) {
		t.Errorf("flood result: error=%v, %d bytes, ends %q", got.IsError, len(got.Text), got.Text[max(0, len(got.Text)-40):])
	}
}

// Tool arguments: more than 1 MiB is refused before the tool runs.
func TestLimitToolArguments(t *testing.T) {
	testpar.UnlessRace(t)
	big := strings.Repeat("a", tool.MaxArgsBytes)
	_, evs, err := funcRun(t, context.Background(), project(skill("ops", "1.0.0", spec.ChannelInline)), Options{},
		scriptFunc([]step{read("ops"), call("ops_echo", map[string]string{"text": big}), say("ok")}, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("arguments are %d bytes; the limit is 1 MiB (1048576 bytes)", len(big)+len(`{"text":""}`))
	if r := results(evs, "ops_echo"); len(r) != 1 || !r[0].Error || r[0].Result != want {
		t.Errorf("ops_echo results: %+v, want %q", r, want)
	}
}

// Task caps: the board answers addTask past max-pending-tasks or
// max-total-tasks with an error code the model reads, and the run goes on.
func TestLimitTaskCaps(t *testing.T) {
	testpar.UnlessRace(t)
	for _, tc := range []struct {
		name           string
		pending, total int
		code, message  string
	}{
		{"pending", 2, 10, "enqueued_task_cap_exceeded", "at most 2 tasks may wait to run and 2 already do; run the board first"},
		{"total", 10, 2, "total_task_cap_exceeded", "the board allows 2 tasks over the run and has 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := project(team())
			p.Workflow.Limits.MaxPendingTasks, p.Workflow.Limits.MaxTotalTasks = tc.pending, tc.total
			res, evs, err := funcRun(t, context.Background(), p, Options{}, scriptFunc([]step{
				read("team"),
				calls("addTask", add("a", "iso"), "addTask", add("b", "iso"), "addTask", add("c", "iso")),
				say("replanned"),
			}, nil))
			if err != nil || res.Answer != "replanned" {
				t.Fatalf("answer %q, err %v", res.Answer, err)
			}
			r := results(evs, "addTask")
			if len(r) != 3 {
				t.Fatalf("%d addTask results", len(r))
			}
			var got struct {
				OK      bool   `json:"ok"`
				Error   string `json:"error"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal([]byte(r[2].Result), &got); err != nil {
				t.Fatalf("not JSON: %s", r[2].Result)
			}
			if got.OK || got.Error != tc.code || !strings.Contains(r[2].Result, tc.message) {
				t.Errorf("third addTask: %s; want %s with %q", r[2].Result, tc.code, tc.message)
			}
		})
	}
}

// Steps per generator: the host and a worker each stop at max-steps with
// an error that names who, and the limit; never a hang.
func TestLimitMaxSteps(t *testing.T) {
	testpar.UnlessRace(t)
	forever := func(*model.Request) *model.Response { return calls("no_such_tool", nil)(nil) }
	t.Run("host", func(t *testing.T) {
		p := project()
		p.Workflow.Limits.MaxSteps = 3
		_, _, err := funcRun(t, context.Background(), p, Options{}, func(_ context.Context, req *model.Request) (*model.Response, error) {
			return forever(req), nil
		})
		if !errors.Is(err, ErrMaxSteps) || !strings.Contains(err.Error(), "max-steps reached without a final answer (max-steps 3)") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("worker", func(t *testing.T) {
		p := project(team())
		p.Workflow.Host = nil // a pipeline
		// A dependent, so the failure blocks the board and fails the run.
		p.Workflow.Tasks = []spec.Task{{ID: "spin", Goal: "never ends", Assignee: "team/loop"}, {ID: "after", Goal: "after", Deps: []string{"spin"}}}
		_, evs, err := funcRun(t, context.Background(), p, Options{}, scriptFunc(nil, forever))
		if err == nil || !strings.Contains(err.Error(), "task spin failed") || !strings.Contains(err.Error(), "max-steps 2") {
			t.Errorf("err = %v", err)
		}
		failed := false
		for _, e := range evs {
			failed = failed || e.Type == event.TaskFailed && e.Task == "spin" && strings.Contains(e.Err, "max-steps")
		}
		if !failed {
			t.Error("no task.failed event naming max-steps")
		}
	})
}

// Run wall-clock: when the run's context reaches its deadline, every
// generator stops, the run returns the context's error (the CLI turns it
// into "run timed out after …") and the record is complete. The model
// blocks until the context is done, so nothing here depends on timing.
func TestLimitRunDeadline(t *testing.T) {
	testpar.UnlessRace(t)
	for _, tc := range []struct {
		name string
		p    func() *spec.Project
	}{
		{"conversation", func() *spec.Project { return project() }},
		{"pipeline", func() *spec.Project {
			p := project(team())
			p.Workflow.Host = nil
			p.Workflow.Tasks = []spec.Task{{ID: "a", Goal: "wait", Assignee: "team/iso"}, {ID: "b", Goal: "wait too"}}
			return p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			runs := t.TempDir()
			res, evs, err := funcRun(t, ctx, tc.p(), Options{RunsDir: runs}, func(ctx context.Context, _ *model.Request) (*model.Response, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want context.DeadlineExceeded", err)
			}
			if len(evs) == 0 || evs[len(evs)-1].Type != event.RunFinished || evs[len(evs)-1].Err == "" {
				t.Error("the event stream does not end in a failed run.finished")
			}
			var sum struct{ Status, Error string }
			if err := json.Unmarshal(readFile(t, filepath.Join(res.Dir, "run.json")), &sum); err != nil {
				t.Fatal(err)
			}
			if sum.Status != "interrupted" || !strings.Contains(sum.Error, "deadline exceeded") {
				t.Errorf("run.json: %+v", sum)
			}
			if _, err := os.Stat(filepath.Join(res.Dir, "events.jsonl")); err != nil {
				t.Error("no events.jsonl")
			}
		})
	}
}
