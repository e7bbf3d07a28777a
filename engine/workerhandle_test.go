package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/work"
)

// K1, K2: a worker elsewhere, given the attempt's derived key through the
// wire's JSON, keeps a tool result under the handle the run gives it when
// the task runs in process, so the task's requests — context, messages,
// tools and cache key — are the same bytes wherever it ran.
func TestWorkerKeepsUnderTheRunsHandle(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	long := strings.Repeat("a long result line\n", 40)
	steps := func() []step {
		return []step{call("team_echo", map[string]string{"text": long}), say("done")}
	}
	newProject := func() *spec.Project {
		p := project(team())
		p.Workflow.Host = nil
		p.Workflow.Limits.MaxResultTokens = 20
		p.Workflow.Tasks = []spec.Task{{ID: "t1", Goal: "g", Assignee: "team/iso"}}
		return p
	}
	handlesOf := func(m *recModel) []string {
		var hs []string
		for _, req := range m.requests() {
			b, _ := json.Marshal(req.Messages)
			hs = append(hs, handleRe.FindAllString(string(b), -1)...)
		}
		return hs
	}

	local := &recModel{steps: steps()}
	r, err := New(newProject(), Options{Model: local, HandleKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(context.Background(), ""); err != nil {
		t.Fatal(err)
	}

	remote := &recModel{steps: steps()}
	d := &fakeDispatcher{answer: func(at *work.Attempt) *work.Outcome {
		// On a board runner, not the test's goroutine: no t.Fatal.
		b, err := json.Marshal(at)
		if err != nil {
			t.Error(err)
			return &work.Outcome{Error: err.Error()}
		}
		var wire work.Attempt
		if err := json.Unmarshal(b, &wire); err != nil {
			t.Error(err)
			return &work.Outcome{Error: err.Error()}
		}
		return Work(context.Background(), &wire, work.Options{Model: remote, Skill: team()})
	}}
	r, err = New(newProject(), Options{Model: &recModel{}, Dispatcher: d, HandleKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	in, out := handlesOf(local), handlesOf(remote)
	if len(in) == 0 {
		t.Fatal("the task's requests in process named no handle: the result was not kept")
	}
	if strings.Join(in, " ") != strings.Join(out, " ") {
		t.Errorf("handles in process %v, on the worker %v; want the same", in, out)
	}
	lr, rr := local.requests(), remote.requests()
	if len(lr) != len(rr) {
		t.Fatalf("%d requests in process, %d on the worker", len(lr), len(rr))
	}
	for i := range lr {
		a, _ := json.Marshal(struct{ C, M, T, K any }{lr[i].Context, lr[i].Messages, lr[i].Tools, lr[i].CacheKey})
		b, _ := json.Marshal(struct{ C, M, T, K any }{rr[i].Context, rr[i].Messages, rr[i].Tools, rr[i].CacheKey})
		if !bytes.Equal(a, b) {
			t.Errorf("request %d in process and on the worker differ:\n%s\n%s", i+1, a, b)
		}
	}
}
