package engine

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// Token budgets: a model call that does not fit in what is left of
// limits.max-input-tokens (or once max-output-tokens is used up) is
// refused and the run ends with an error naming the budget; without a
// budget the same run finishes. The input budget stops the run after one
// call: 150 tokens are left, and the host's next request counts more.
func TestTokenBudgets(t *testing.T) {
	testpar.UnlessRace(t)
	for _, tc := range []struct {
		name     string
		in, out  int
		wantCall int    // model calls made
		wantErr  string // "" for a finished run
	}{
		{"no budget", 0, 0, 4, ""},
		{"input", 250, 0, 1, "limits.max-input-tokens is 250"},
		{"output", 0, 20, 2, "limits.max-output-tokens is 20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := project(skill("aa", "1.0.0", spec.ChannelInline))
			p.Workflow.Limits.MaxInputTokens, p.Workflow.Limits.MaxOutputTokens = tc.in, tc.out
			host := scriptFunc([]step{read("aa"), call("aa_echo", map[string]string{"text": "a"}), call("aa_echo", map[string]string{"text": "b"}), say("done")}, nil)
			calls := 0
			_, _, err := funcRun(t, context.Background(), p, Options{}, func(ctx context.Context, req *model.Request) (*model.Response, error) {
				calls++
				resp, err := host(ctx, req)
				if resp != nil {
					resp.Usage = model.Usage{InputTokens: 100, OutputTokens: 10}
				}
				return resp, err
			})
			if calls != tc.wantCall {
				t.Errorf("%d model calls, want %d", calls, tc.wantCall)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (!errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want ErrBudget naming %q", err, tc.wantErr)
			}
		})
	}
}

// billedFunc answers like steps and bills every call 100 input and 10
// output tokens, as a provider would.
func billedFunc(f model.Func) model.Func {
	return func(ctx context.Context, req *model.Request) (*model.Response, error) {
		resp, err := f(ctx, req)
		if resp != nil {
			resp.Usage = model.Usage{InputTokens: 100, OutputTokens: 10}
		}
		return resp, err
	}
}

// Per-agent budgets: limits.agents bounds what all of
// an agent's tasks use together. Once team/iso has used its 300 input
// tokens its next task fails with an error naming the budget, while
// another agent's task runs; the task event says which budget.
func TestAgentTokenBudget(t *testing.T) {
	testpar.UnlessRace(t)
	for _, tc := range []struct {
		name   string
		budget spec.Budget
		failed string // the task that fails, "" for none
		want   string
	}{
		{"none", spec.Budget{}, "", ""},
		{"input", spec.Budget{MaxInputTokens: 300}, "second", "300 input tokens used, limits.agents.team/iso.max-input-tokens is 300 (agent team/iso, all its tasks together)"},
		{"output", spec.Budget{MaxOutputTokens: 25}, "second", "30 output tokens used, limits.agents.team/iso.max-output-tokens is 25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := project(team())
			p.Workflow.Host = nil
			p.Workflow.Limits.Concurrency = 1
			p.Workflow.Limits.Agents = map[string]spec.Budget{"team/iso": tc.budget, "team/prim": {MaxInputTokens: 1}}
			p.Workflow.Tasks = []spec.Task{
				{ID: "first", Goal: "one", Assignee: "team/iso"},
				{ID: "second", Goal: "two", Assignee: "team/iso", Deps: []string{"first"}},
				{ID: "other", Goal: "three", Assignee: "team/conv", Deps: []string{"first"}},
			}
			// first: three calls (300 in, 30 out); second would be the
			// fourth call of team/iso.
			worker := func(req *model.Request) *model.Response {
				if req.Caller.Step < 2 {
					return call("team_echo", map[string]string{"text": "x"})(req)
				}
				return say("done " + req.Caller.TaskID)(req)
			}
			_, evs, err := funcRun(t, context.Background(), p, Options{}, billedFunc(scriptFunc(nil, worker)))
			failed := map[string]string{}
			for _, e := range evs {
				if e.Type == event.TaskFailed {
					failed[e.Task] = e.Err
				}
			}
			if tc.failed == "" {
				if err != nil || len(failed) > 0 {
					t.Fatalf("run error %v, failed tasks %v", err, failed)
				}
				return
			}
			if len(failed) != 1 || !strings.Contains(failed[tc.failed], tc.want) || !strings.Contains(failed[tc.failed], "token budget reached") {
				t.Errorf("failed tasks %v; want only %s, naming %q", failed, tc.failed, tc.want)
			}
			// The pipeline fails, saying which budget.
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run error %v, want it to name %q", err, tc.want)
			}
		})
	}
}

// An in-process attempt books each call into the run's account as it
// happens, so an agent's budget stops a task mid-way, not only at its
// dispatch: a task whose agent may use 250 input tokens makes its third
// call (after 200 used, at 300 the budget is spent) and no fourth.
func TestBudgetStopsTaskMidway(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(team())
	p.Workflow.Host = nil
	p.Workflow.Limits.Agents = map[string]spec.Budget{"team/iso": {MaxInputTokens: 250}}
	p.Workflow.Tasks = []spec.Task{{ID: "only", Goal: "one", Assignee: "team/iso"}}
	calls := 0
	worker := func(req *model.Request) *model.Response {
		calls++
		return call("team_echo", map[string]string{"text": "x"})(req) // never done on its own
	}
	_, evs, err := funcRun(t, context.Background(), p, Options{}, billedFunc(scriptFunc(nil, worker)))
	if calls != 3 {
		t.Errorf("%d model calls, want 3: the budget is checked before each call of the task", calls)
	}
	var failed string
	for _, e := range evs {
		if e.Type == event.TaskFailed {
			failed = e.Err
		}
	}
	if !strings.Contains(failed, "token budget reached") || !strings.Contains(failed, "limits.agents.team/iso.max-input-tokens is 250") {
		t.Errorf("task error %q, want the agent's budget", failed)
	}
	if err == nil {
		t.Error("the run finished; want it to fail on the budget")
	}
}

// A run stopped by a token budget resumes under a raised one: budgets
// are not part of the workflow's digest, so no --force is needed, and
// the resumed run's budget counts what the first run used. Changing
// any other limit still refuses the resume.
func TestResumeRaisesBudget(t *testing.T) {
	p := project(skill("aa", "1.0.0", spec.ChannelInline))
	p.Workflow.Limits.MaxOutputTokens = 25
	steps := []step{read("aa"), call("aa_echo", map[string]string{"text": "a"}), call("aa_echo", map[string]string{"text": "b"}),
		call("aa_echo", map[string]string{"text": "c"}), say("done")}
	calls := 0
	m := billedFunc(func(_ context.Context, req *model.Request) (*model.Response, error) {
		calls++
		return steps[req.Caller.Step](req), nil
	})
	runs := t.TempDir()
	r, err := New(p, Options{Model: m, RunsDir: runs})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), "")
	if !errors.Is(err, ErrBudget) || calls != 3 {
		t.Fatalf("first run: %d calls, %v; want 3 calls and the budget error", calls, err)
	}

	resumeWith := func(edit func(*spec.Workflow)) (*Result, error) {
		t.Helper()
		j, err := LoadReplay(res.Dir)
		if err != nil {
			t.Fatal(err)
		}
		wf := *p.Workflow
		edit(&wf)
		q := *p
		q.Workflow = &wf
		r, err := New(&q, Options{Model: m, Resume: j})
		if err != nil {
			t.Fatal(err)
		}
		return r.Execute(context.Background(), "")
	}
	// As a killed run leaves it: run.json's totals are those of its
	// start. The calls are counted from requests.jsonl all the same.
	editSummary(t, res.Dir, func(m map[string]any) {
		m["input_tokens"], m["output_tokens"], m["status"] = 0, 0, "running"
	})
	// The same budget: refused before any model call (30 used of 25).
	calls = 0
	if _, err := resumeWith(func(*spec.Workflow) {}); !errors.Is(err, ErrBudget) || calls != 0 || !strings.Contains(err.Error(), "30 output tokens used") {
		t.Fatalf("resume under the same budget: %d calls, %v", calls, err)
	}
	// Another limit changed: still refused as a changed workflow.
	if _, err := resumeWith(func(w *spec.Workflow) { w.Limits.MaxSteps = 7 }); !errors.Is(err, ErrChanged) {
		t.Fatalf("resume with max-steps changed: %v, want ErrChanged", err)
	}
	// Raised (and priced): goes on from the journal to the answer.
	calls = 0
	res2, err := resumeWith(func(w *spec.Workflow) {
		w.Limits.MaxOutputTokens = 100
		w.Prices = map[string]spec.Price{"x/y": {Input: 1}}
	})
	if err != nil || res2.Answer != "done" || calls != 2 {
		t.Fatalf("resume under a raised budget: answer %q, %d calls, %v", res2.Answer, calls, err)
	}
	sum := readSummary(t, res.Dir)
	if sum.InputTokens != 500 || sum.OutputTokens != 50 || sum.Status != runrecord.Finished {
		t.Errorf("run.json: %d input and %d output tokens, status %s; want 500 and 50 (3 calls, then 2 after the resume), finished",
			sum.InputTokens, sum.OutputTokens, sum.Status)
	}
}

func readSummary(t *testing.T, dir string) runrecord.Summary {
	t.Helper()
	var s runrecord.Summary
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "run.json")), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// The run's budgets bound a pipeline's workers too, not only a host:
// once the first task's three calls have spent limits.max-input-tokens,
// the second task's first model call is refused and it fails naming the
// run's budget.
func TestRunBudgetPipeline(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(team())
	p.Workflow.Host = nil
	p.Workflow.Limits.MaxInputTokens = 300
	p.Workflow.Tasks = []spec.Task{
		{ID: "first", Goal: "one", Assignee: "team/iso"},
		{ID: "second", Goal: "two", Assignee: "team/conv", Deps: []string{"first"}},
	}
	calls := map[string]int{}
	worker := func(req *model.Request) *model.Response {
		calls[req.Caller.TaskID]++
		if req.Caller.Step < 2 {
			return call("team_echo", map[string]string{"text": "x"})(req)
		}
		return say("done " + req.Caller.TaskID)(req)
	}
	_, evs, err := funcRun(t, context.Background(), p, Options{}, billedFunc(scriptFunc(nil, worker)))
	if calls["first"] != 3 || calls["second"] != 0 {
		t.Errorf("model calls by task %v; want first 3 and second none", calls)
	}
	failed := map[string]string{}
	for _, e := range evs {
		if e.Type == event.TaskFailed {
			failed[e.Task] = e.Err
		}
	}
	if want := "300 input tokens used, limits.max-input-tokens is 300"; len(failed) != 1 || !strings.Contains(failed["second"], want) {
		t.Errorf("failed tasks %v; want only second, naming %q", failed, want)
	}
	if err == nil || !strings.Contains(err.Error(), "limits.max-input-tokens is 300") {
		t.Errorf("run error %v, want it to name the run's budget", err)
	}
}
