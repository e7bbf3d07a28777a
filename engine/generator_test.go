package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tokens"
	"github.com/fsdrun/fsd/transcript"
)

// testEnv is a generator's world with fixed tools that echo their name.
type testEnv struct {
	defs  []model.ToolDef
	calls []string
}

func (e *testEnv) prepare(context.Context)                       {}
func (e *testEnv) contextBlock() (string, string)                { return "CONTEXT", "" }
func (e *testEnv) tools() []model.ToolDef                        { return e.defs }
func (e *testEnv) loaded(string) bool                            { return true }
func (e *testEnv) current(string, string) bool                   { return true }
func (e *testEnv) settle()                                       {}
func (e *testEnv) command(string) (isCommand, failsInDoubt bool) { return false, false }
func (e *testEnv) approval(model.ToolCall) approval.Tool         { return approval.Tool{} }
func (e *testEnv) call(_ context.Context, c model.ToolCall) model.ToolResult {
	e.calls = append(e.calls, c.Name)
	return model.ToolResult{Text: "ran " + c.Name}
}

// newTestGenerator builds the generator loop from its collaborators
// alone: no run.
func newTestGenerator(m model.Model, maxSteps int) (*generator, *testEnv, *event.Recorder, *account) {
	rec := &event.Recorder{}
	u := newAccount(&spec.Workflow{}, spec.Limits{})
	env := &testEnv{defs: []model.ToolDef{{Name: "alpha"}, {Name: "beta"}}}
	g := &generator{
		genDeps: genDeps{runID: "unit", emit: rec.Emit, acct: u, tokens: sharedTokens},
		model:   m, tr: transcript.New(nil), env: env, maxMessages: 60, maxSteps: maxSteps,
	}
	return g, env, rec, u
}

// TestGeneratorLoop runs the loop on its own: calls run in order with
// their results recorded after them, a tool not offered is an error
// result the model reads (L3), repeated call ids get fresh ones, usage is
// counted, and every model call is a request event.
func TestGeneratorLoop(t *testing.T) {
	testpar.UnlessRace(t)
	m := &recModel{steps: []step{
		func(*model.Request) *model.Response {
			return &model.Response{Usage: model.Usage{InputTokens: 10, OutputTokens: 2}, Calls: []model.ToolCall{
				{ID: "same", Name: "beta"}, {ID: "same", Name: "alpha"}, {ID: "x", Name: "gamma"}}}
		},
		say("done"),
	}}
	g, env, rec, u := newTestGenerator(m, 5)
	if err := g.add(model.Message{Role: model.User, Text: "go"}); err != nil {
		t.Fatal(err)
	}
	answer, err := g.loop(context.Background())
	if err != nil || answer != "done" {
		t.Fatalf("loop = %q, %v", answer, err)
	}
	if strings.Join(env.calls, ",") != "beta,alpha" {
		t.Errorf("env ran %v, want beta then alpha (gamma was not offered)", env.calls)
	}
	second := m.requests()[1]
	if second.Context != "CONTEXT" {
		t.Errorf("context block = %q", second.Context)
	}
	var results []string
	ids := map[string]bool{}
	for _, msg := range second.Messages {
		if msg.Role == model.Tool {
			results = append(results, msg.Text)
			if ids[msg.CallID] {
				t.Errorf("call id %q answered twice", msg.CallID)
			}
			ids[msg.CallID] = true
			if msg.Name == "gamma" && !msg.IsError {
				t.Error("L3: the unknown tool's result is not an error")
			}
		}
	}
	if want := "ran beta|ran alpha|Unknown tool: gamma"; strings.Join(results, "|") != want {
		t.Errorf("results %q, want %q", strings.Join(results, "|"), want)
	}
	// One accounting: the first call's usage is the provider's (no
	// o200k counts by part); the second reported none, so it is the
	// estimate, marked, with the counts it was made from. The account
	// holds their sum.
	var reqs []event.Event
	for _, e := range rec.Events() {
		if e.Type == event.Request {
			reqs = append(reqs, e)
		}
	}
	if len(reqs) != 2 {
		t.Fatalf("%d request events, want 2", len(reqs))
	}
	if u := reqs[0].Usage; u == nil || *u != (model.Usage{InputTokens: 10, OutputTokens: 2}) || reqs[0].Tokens != nil {
		t.Errorf("first request: usage %+v, tokens %+v; want the provider's 10 in, 2 out and no estimate", u, reqs[0].Tokens)
	}
	est := reqs[1].Usage
	if est == nil || !est.Estimated || reqs[1].Tokens == nil || est.InputTokens != reqs[1].Tokens.Total || est.OutputTokens != tokens.Count("done") {
		t.Fatalf("second request: usage %+v, tokens %+v; want an estimate from the o200k counts", est, reqs[1].Tokens)
	}
	if got, _ := u.total(); got != (model.Usage{InputTokens: 10 + est.InputTokens, OutputTokens: 2 + est.OutputTokens, Estimated: true}) {
		t.Errorf("account %+v, want the sum of the two request events", got)
	}
}

// TestGeneratorMaxSteps: a loop that never answers ends at max-steps
// with ErrMaxSteps (D8).
func TestGeneratorMaxSteps(t *testing.T) {
	testpar.UnlessRace(t)
	always := model.Func(func(context.Context, *model.Request) (*model.Response, error) {
		return &model.Response{Calls: []model.ToolCall{{ID: "c", Name: "alpha"}}}, nil
	})
	g, env, _, _ := newTestGenerator(always, 3)
	if err := g.add(model.Message{Role: model.User, Text: "go"}); err != nil {
		t.Fatal(err)
	}
	_, err := g.loop(context.Background())
	if !errors.Is(err, ErrMaxSteps) || len(env.calls) != 3 {
		t.Errorf("loop err = %v after %d calls, want ErrMaxSteps after 3", err, len(env.calls))
	}
}

// syncWriter is a transcript's record whose Sync fails with err.
type syncWriter struct{ err error }

func (w *syncWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *syncWriter) Sync() error                 { return w.err }

// agentSpans is an Observer that keeps how each agent's span ended.
type agentSpans struct {
	mu   sync.Mutex
	ends []error
}

func (o *agentSpans) Run(ctx context.Context, _, _ string) (context.Context, func(string, error)) {
	return ctx, func(string, error) {}
}
func (o *agentSpans) Agent(ctx context.Context, _ model.Caller) (context.Context, func(string, error)) {
	return ctx, func(_ string, err error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.ends = append(o.ends, err)
	}
}
func (o *agentSpans) Chat(context.Context, *model.Request) func(*model.Response, error) {
	return func(*model.Response, error) {}
}
func (o *agentSpans) Tool(ctx context.Context, _ model.Caller, _ model.ToolCall) (context.Context, func(string, bool)) {
	return ctx, func(string, bool) {}
}

// TestAgentSpanEndsWithTheDeferredWait (O7): a board task's final answer
// waits for the disk after its loop returned (board.Defer); the agent's
// span ends once that wait does, once, and fails with it when the
// answer did not become durable, as the task does.
func TestAgentSpanEndsWithTheDeferredWait(t *testing.T) {
	for _, disk := range []error{nil, errors.New("disk full")} {
		t.Run(fmt.Sprint(disk), func(t *testing.T) {
			obs := &agentSpans{}
			b := board.New(board.Options{Concurrency: 1})
			if _, err := b.Add(board.TaskSpec{ID: "a", Goal: "g"}); err != nil {
				t.Fatal(err)
			}
			rep, err := b.Run(context.Background(), func(ctx context.Context, _ *board.Task, _ []board.DepResult) (string, error) {
				g, _, _, _ := newTestGenerator(&recModel{steps: []step{say("done")}}, 5)
				g.tr, g.obs = transcript.New(&syncWriter{err: disk}, transcript.WithStepSync()), obs
				g.caller.TaskID = "a"
				if err := g.add(model.Message{Role: model.User, Text: "go"}); err != nil {
					return "", err
				}
				return g.loop(ctx)
			})
			if err != nil {
				t.Fatal(err)
			}
			task := rep.Tasks[0]
			if len(obs.ends) != 1 {
				t.Fatalf("the agent's span ended %d times, want once", len(obs.ends))
			}
			if disk == nil {
				if task.Status != board.Completed || obs.ends[0] != nil {
					t.Errorf("task %s, span ended with %v; want completed and no error", task.Status, obs.ends[0])
				}
				return
			}
			if task.Status != board.Failed || !strings.Contains(task.Error, "disk full") {
				t.Fatalf("task %s %q, want failed by the wait", task.Status, task.Error)
			}
			if end := obs.ends[0]; end == nil || !strings.Contains(end.Error(), "disk full") {
				t.Errorf("the agent's span ended with %v, want the wait's error: the task failed", end)
			}
		})
	}
}
