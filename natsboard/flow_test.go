package natsboard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/work"
)

// flowWorkflow writes a board on which a task is dispatched while
// another is still running after a tool call: "probe" calls the reply
// tool note (its observation says "probe-saw-it") and then waits;
// "gate" ends once probe's tool result is in, which dispatches "mid"
// while probe runs; probe ends once mid has asked its model; "late"
// follows probe and mid. mid and late each take a flow policy from the
// table.
func flowWorkflow(t *testing.T, midFlow, lateFlow string) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "skills", "lab"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "skills", "lab", "lab.skill.yaml"), []byte(fmt.Sprintf(`id: lab
name: Lab
description: Probes and reports.
version: 1.0.0
instructions: Probe, then report.
tools:
  - name: note
    description: Notes a finding.
    input: {type: object, properties: {text: {type: string}}}
    run: {reply: "probe-saw-{{.text}}"}
agents:
  prober:
    prompt: Probe.
    tools: [note]
  waiter:
    prompt: Wait.
  mid:
    prompt: Look.
    flow: %s
  late:
    prompt: Look again.
    flow: %s
`, midFlow, lateFlow)), 0o644))
	wf := filepath.Join(dir, "flow.workflow.yaml")
	must(t, os.WriteFile(wf, []byte(`name: flow
model: openai/gpt-5.4-mini
skills: [./skills]
limits: {concurrency: 4}
tasks:
  - {id: probe, goal: probe, assignee: lab/prober}
  - {id: gate, goal: gate, assignee: lab/waiter}
  - {id: mid, goal: look, assignee: lab/mid, deps: [gate]}
  - {id: late, goal: look again, assignee: lab/late, deps: [probe, mid]}
`), 0o644))
	return wf
}

// flowModel plays the four tasks of flowWorkflow and keeps the context
// block each of mid and late was given.
type flowModel struct {
	probed, midAsked chan struct{}
	mu               sync.Mutex
	seen             map[string]string
}

func newFlowModel() *flowModel {
	return &flowModel{probed: make(chan struct{}), midAsked: make(chan struct{}), seen: map[string]string{}}
}

func (m *flowModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	wait := func(ch chan struct{}) error {
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	switch task := req.Caller.TaskID; task {
	case "probe":
		if req.Caller.Step == 0 {
			return &model.Response{Calls: []model.ToolCall{{ID: "c1", Name: "note", Args: []byte(`{"text":"it"}`)}}}, nil
		}
		close(m.probed) // its tool result is in the transcript
		if err := wait(m.midAsked); err != nil {
			return nil, err
		}
		return &model.Response{Text: "probed"}, nil
	case "gate":
		if err := wait(m.probed); err != nil {
			return nil, err
		}
		return &model.Response{Text: "open"}, nil
	case "mid", "late":
		m.mu.Lock()
		m.seen[task] = req.Context
		m.mu.Unlock()
		if task == "mid" {
			close(m.midAsked)
		}
		return &model.Response{Text: task + " done"}, nil
	}
	return nil, fmt.Errorf("no part for task %q", req.Caller.TaskID)
}

// TestFlowVisibilitySameOnEveryTransport: a task's tool observations
// become visible to other tasks when its attempt's outcome comes back,
// not while it runs — on the in-process board and through NATS alike. A
// task dispatched while a sibling runs after a tool call does not see
// that call under any policy; a task dispatched after the sibling ended
// sees it as its policy says.
func TestFlowVisibilitySameOnEveryTransport(t *testing.T) {
	t.Parallel() // it waits on subprocesses and its own server
	const obs = "probe-saw-it"
	cases := []struct {
		name, midFlow, lateFlow string
		midSees, lateSees       bool
	}{
		{"recent", "recent", "recent", false, true},
		{"all", "all", "all", false, true},
		{"deps", "deps", "deps", false, true},
		{"ancestors", "ancestors", "ancestors", false, true},
		{"none", "none", "none", false, false},
		{"tools filter", "recent", "{policy: recent, tools: [other]}", false, false},
	}
	srv := runServer(t)
	for _, tc := range cases {
		wf := flowWorkflow(t, tc.midFlow, tc.lateFlow)
		for _, transport := range []string{"in-process", "nats"} {
			t.Run(tc.name+"/"+transport, func(t *testing.T) {
				m := newFlowModel()
				var d work.Dispatcher
				if transport == "nats" {
					ctx := context.Background()
					c, err := Connect(ctx, srv.ClientURL(), Options{})
					must(t, err)
					defer c.Close()
					must(t, c.Publish(ctx, project(t, wf)))
					stop := serve(t, srv.ClientURL(), WorkerOptions{Work: engine.Work, Name: "w", Concurrency: 4, AckWait: 2 * time.Second,
						Model: func(string, string) (model.Model, error) { return m, nil }})
					defer stop()
					d = c
				}
				p, diags := spec.LoadProject(wf)
				must(t, diags.Err())
				var seed [32]byte
				r, err := engine.New(p, engine.Options{Model: m, Dispatcher: d, Seed: &seed})
				must(t, err)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if _, err := r.Execute(ctx, ""); err != nil {
					t.Fatal(err)
				}
				for task, want := range map[string]bool{"mid": tc.midSees, "late": tc.lateSees} {
					block, ok := m.seen[task]
					if !ok {
						t.Fatalf("task %s never asked its model", task)
					}
					if got := strings.Contains(block, obs); got != want {
						t.Errorf("task %s sees probe's call: %v, want %v; its context:\n%s", task, got, want, block)
					}
				}
			})
		}
	}
}
