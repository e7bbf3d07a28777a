package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/spec"
)

// fakeDispatcher answers every task attempt with answer(t) and keeps the
// tasks it was given.
type fakeDispatcher struct {
	mu     sync.Mutex
	tasks  map[string]RemoteTask
	answer func(t *RemoteTask) *RemoteResult
}

func (d *fakeDispatcher) Dispatch(_ context.Context, t *RemoteTask, _ event.Sink) (*RemoteResult, error) {
	d.mu.Lock()
	if d.tasks == nil {
		d.tasks = map[string]RemoteTask{}
	}
	d.tasks[t.Task] = *t
	d.mu.Unlock()
	if d.answer != nil {
		return d.answer(t), nil
	}
	return &RemoteResult{Result: "done " + t.Task}, nil
}

// TestRemoteDeadlineIsTheAgentsTimeout: a task sent to a worker carries
// its agent's timeout as its deadline, never the run's (--timeout): a
// coordinator that times out leaves its tasks running on the workers, as
// an interrupted one does, for a resume to pick up.
func TestRemoteDeadlineIsTheAgentsTimeout(t *testing.T) {
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
