package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/work"
)

// TestRemoteBudgetCheckedAtDispatch: a worker elsewhere cannot see what
// the run's other tasks use, so the coordinator checks the budgets, the
// agent's and the run's, before it dispatches a task. Once the first
// remote task's usage (booked from its outcome) has spent the budget, the
// second is never sent: it fails naming the budget.
func TestRemoteBudgetCheckedAtDispatch(t *testing.T) {
	testpar.UnlessRace(t)
	for _, tc := range []struct {
		name   string
		agents map[string]spec.Budget
		maxOut int    // the run's limits.max-output-tokens
		second string // the second task's assignee
		usage  model.Usage
		want   string
	}{
		{"agent", map[string]spec.Budget{"team/iso": {MaxInputTokens: 300}}, 0, "team/iso",
			model.Usage{InputTokens: 300}, "limits.agents.team/iso.max-input-tokens is 300"},
		{"run", nil, 30, "team/conv",
			model.Usage{OutputTokens: 30}, "limits.max-output-tokens is 30"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := project(team())
			p.Workflow.Host = nil
			p.Workflow.Limits.Agents, p.Workflow.Limits.MaxOutputTokens = tc.agents, tc.maxOut
			p.Workflow.Tasks = []spec.Task{
				{ID: "first", Goal: "one", Assignee: "team/iso"},
				{ID: "second", Goal: "two", Assignee: tc.second, Deps: []string{"first"}},
			}
			d := &fakeDispatcher{answer: func(t *work.Attempt) *work.Outcome {
				return &work.Outcome{Result: "done " + t.Task, Usage: tc.usage}
			}}
			rec := &event.Recorder{}
			r, err := New(p, Options{Model: &recModel{}, Dispatcher: d, Sink: rec})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Execute(context.Background(), "")
			if _, sent := d.tasks["second"]; sent {
				t.Error("the second task was dispatched after the budget was spent")
			}
			failed := map[string]string{}
			for _, e := range rec.Events() {
				if e.Type == event.TaskFailed {
					failed[e.Task] = e.Err
				}
			}
			if !strings.Contains(failed["second"], tc.want) || len(failed) != 1 {
				t.Errorf("failed tasks %v; want only second, naming %q", failed, tc.want)
			}
			if err == nil {
				t.Error("the pipeline succeeded with a task stopped by its budget")
			}
		})
	}
}
