package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/work"
)

// TestRemoteBudgetCheckedAtDispatch: a worker elsewhere cannot see what
// the run's other tasks use, so the coordinator checks the budgets before
// it dispatches a task. Once the first remote task's usage (booked from
// its outcome) has spent team/iso's budget, the second is never sent: it
// fails naming the budget.
func TestRemoteBudgetCheckedAtDispatch(t *testing.T) {
	p := project(team())
	p.Workflow.Host = nil
	p.Workflow.Limits.Agents = map[string]spec.Budget{"team/iso": {MaxInputTokens: 300}}
	p.Workflow.Tasks = []spec.Task{
		{ID: "first", Goal: "one", Assignee: "team/iso"},
		{ID: "second", Goal: "two", Assignee: "team/iso", Deps: []string{"first"}},
	}
	d := &fakeDispatcher{answer: func(t *work.Attempt) *work.Outcome {
		return &work.Outcome{Result: "done " + t.Task, Usage: model.Usage{InputTokens: 300}}
	}}
	rec := &event.Recorder{}
	r, err := New(p, Options{Model: &recModel{}, Dispatcher: d, Sink: rec})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Execute(context.Background(), "")
	if _, sent := d.tasks["second"]; sent {
		t.Error("the second task was dispatched after its agent's budget was spent")
	}
	failed := map[string]string{}
	for _, e := range rec.Events() {
		if e.Type == event.TaskFailed {
			failed[e.Task] = e.Err
		}
	}
	if want := "limits.agents.team/iso.max-input-tokens is 300"; !strings.Contains(failed["second"], want) || len(failed) != 1 {
		t.Errorf("failed tasks %v; want only second, naming %q", failed, want)
	}
	if err == nil {
		t.Error("the pipeline succeeded with a task stopped by its budget")
	}
}
