package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// step is one scripted response, computed from the request it answers.
type step func(req *model.Request) *model.Response

// recModel plays steps in order and records every request it saw.
type recModel struct {
	mu    sync.Mutex
	steps []step
	reqs  []*model.Request
}

func (m *recModel) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := *req
	cp.Messages = append([]model.Message(nil), req.Messages...)
	cp.Tools = append([]model.ToolDef(nil), req.Tools...)
	m.reqs = append(m.reqs, &cp)
	i := len(m.reqs) - 1
	if i >= len(m.steps) {
		return nil, fmt.Errorf("test model: no step %d", i+1)
	}
	return m.steps[i](req), nil
}

func (m *recModel) requests() []*model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*model.Request(nil), m.reqs...)
}

func call(name string, args any) step {
	return calls(name, args)
}

// calls makes one response with several calls: name, args, name, args…
func calls(pairs ...any) step {
	return func(*model.Request) *model.Response {
		r := &model.Response{}
		for i := 0; i+1 < len(pairs); i += 2 {
			b, _ := json.Marshal(pairs[i+1])
			r.Calls = append(r.Calls, model.ToolCall{ID: fmt.Sprintf("c%d", i/2), Name: pairs[i].(string), Args: b})
		}
		return r
	}
}

func say(text string) step {
	return func(*model.Request) *model.Response { return &model.Response{Text: text} }
}

func read(id string) step { return call("read_skill", map[string]string{"id": id}) }

// skill builds an enabled skill with a marker body and a state, a store
// and a reply tool named after it.
func skill(id, version string, ch spec.Channel) *spec.Skill {
	return &spec.Skill{
		ID: id, Name: "Skill " + id, Description: "Does " + id + " things.", Version: version, Channel: ch,
		Instructions: "# " + id + "\n\nBODY-OF-" + id + "\n\n## Steps\n\nDo the " + id + " steps.\n",
		Dir:          ".",
		Tools: []spec.Tool{
			{Name: id + "_state", Run: spec.ToolRun{Kind: spec.RunState, Op: "get"}},
			{Name: id + "_setstate", Run: spec.ToolRun{Kind: spec.RunState, Op: "set"}},
			{Name: id + "_store", Run: spec.ToolRun{Kind: spec.RunStore, Op: "get"}},
			{Name: id + "_setstore", Run: spec.ToolRun{Kind: spec.RunStore, Op: "set"}},
			{Name: id + "_echo", Run: spec.ToolRun{Kind: spec.RunReply, Reply: id + " says {{.text}}"},
				Input: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}},
		},
	}
}

func project(skills ...*spec.Skill) *spec.Project {
	return &spec.Project{
		Workflow: &spec.Workflow{Name: "test", Host: &spec.Host{Prompt: "You are a test host."}, Input: "hello"},
		Skills:   skills,
	}
}

// runWith runs p on the steps and returns the run, the model and the events.
func runWith(t *testing.T, p *spec.Project, opts Options, steps ...step) (*Result, *recModel, []event.Event, error) {
	t.Helper()
	m := &recModel{steps: steps}
	rec := &event.Recorder{}
	opts.Model = m
	opts.Sink = rec
	if opts.Rand == nil {
		opts.Rand = rand.NewChaCha8([32]byte{1}) // reproducible handles
	}
	r, err := New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), "")
	return res, m, rec.Events(), err
}

func toolNames(req *model.Request) []string {
	var out []string
	for _, t := range req.Tools {
		out = append(out, t.Name)
	}
	return out
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// lastResult is the newest tool result in a request.
func lastResult(req *model.Request) model.Message {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == model.Tool {
			return req.Messages[i]
		}
	}
	return model.Message{}
}

// userKey is the key the runs of the test binary seal with (its own:
// keytest.Main in TestMain).
func userKey(t *testing.T) runrecord.Key {
	t.Helper()
	k, err := runrecord.UserKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
