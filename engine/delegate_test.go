package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/transcript"
)

// multiModel answers each generator from its own list, by task id, then
// bare agent name, then "host", and records every request per caller.
type multiModel struct {
	mu      sync.Mutex
	scripts map[string][]step
	reqs    map[string][]*model.Request
}

func (m *multiModel) key(c model.Caller) string {
	if _, ok := m.scripts[c.TaskID]; ok && c.TaskID != "" {
		return c.TaskID
	}
	if c.Agent == "" {
		return "host"
	}
	a := c.Agent
	if i := strings.LastIndexByte(a, '/'); i >= 0 {
		a = a[i+1:]
	}
	return a
}

func (m *multiModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.mu.Lock()
	k := m.key(req.Caller)
	cp := *req
	cp.Messages = append([]model.Message(nil), req.Messages...)
	if m.reqs == nil {
		m.reqs = map[string][]*model.Request{}
	}
	m.reqs[k] = append(m.reqs[k], &cp)
	steps := m.scripts[k]
	m.mu.Unlock()
	if req.Caller.Step >= len(steps) {
		return nil, fmt.Errorf("test model: %s has no step %d", k, req.Caller.Step+1)
	}
	return steps[req.Caller.Step](req), nil
}

func (m *multiModel) requests(k string) []*model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reqs[k]
}

func team() *spec.Skill {
	s := skill("team", "1.0.0", spec.ChannelInline)
	s.Agents = []spec.Agent{
		{Name: "iso", Prompt: "ISO-PROMPT", Visibility: spec.VisibilitySub, Flow: spec.Flow{Policy: spec.FlowDeps}, Tools: []string{"team_echo"}},
		{Name: "conv", Prompt: "CONV-PROMPT", ContextSupply: "conversation", Turns: 2, Visibility: spec.VisibilitySub, Flow: spec.Flow{Policy: spec.FlowNone}},
		{Name: "prim", Prompt: "PRIM-PROMPT", Visibility: spec.VisibilityPrimary},
		{Name: "quiet", Prompt: "QUIET", Visibility: spec.Visibility{}},
		{Name: "loop", Prompt: "LOOP", MaxSteps: 2, Tools: []string{"team_echo"}},
	}
	return s
}

func add(id, assignee string, deps ...string) map[string]any {
	return map[string]any{"id": id, "goal": "goal of " + id, "assignee": assignee, "deps": deps}
}

func runMulti(t *testing.T, p *spec.Project, opts Options, scripts map[string][]step) (*Result, *multiModel, []event.Event, error) {
	t.Helper()
	m := &multiModel{scripts: scripts}
	rec := &event.Recorder{}
	opts.Model, opts.Sink = m, rec
	opts.Rand = rand.NewChaCha8([32]byte{2})
	r, err := New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), "")
	return res, m, rec.Events(), err
}

// history is an earlier conversation of three turns.
func history() []model.Message {
	var h []model.Message
	for i := 1; i <= 3; i++ {
		h = append(h, model.Message{Role: model.User, Text: fmt.Sprintf("OLD-TURN-%d", i)},
			model.Message{Role: model.Assistant, Text: fmt.Sprintf("old answer %d", i)})
	}
	return h
}

// D1, D2, D4, D5: a skill with agents gives the board tools; board tools
// answer {ok:false} codes; an isolated worker sees nothing of the parent;
// a conversation worker sees exactly its last N whole turns and never the
// pending runBoard call.
func TestDelegationSupply(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(team())
	p.Workflow.Input = "NEW-TURN"
	res, m, _, err := runMulti(t, p, Options{History: history()}, map[string][]step{
		"host": {
			func(req *model.Request) *model.Response {
				if has(toolNames(req), "addTask") {
					t.Error("D1: board tools offered before a skill with agents is loaded")
				}
				return read("team")(req)
			},
			call("addTask", map[string]any{"goal": "x", "assignee": "nobody"}),
			calls("addTask", add("a", "iso"), "addTask", add("b", "conv", "a")),
			call("runBoard", nil),
			say("done"),
		},
		"iso":  {say("iso result")},
		"conv": {say("conv result")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "done" {
		t.Errorf("answer = %q", res.Answer)
	}
	host := m.requests("host")
	if !has(toolNames(host[1]), "addTask") || !has(toolNames(host[1]), "runBoard") {
		t.Errorf("D1: board tools missing after reading a skill with agents: %v", toolNames(host[1]))
	}
	if r := lastResult(host[2]); !strings.Contains(r.Text, `"ok":false`) || !strings.Contains(r.Text, "unknown_assignee") || !strings.Contains(r.Text, "iso") {
		t.Errorf("D2: unknown assignee answered %s", r.Text)
	}
	board := lastResult(host[4]).Text
	if !strings.Contains(board, "iso result") || !strings.Contains(board, "conv result") || !strings.Contains(board, "drained") {
		t.Errorf("runBoard result = %s", board)
	}

	iso := m.requests("iso")[0]
	for _, msg := range iso.Messages {
		if strings.Contains(msg.Text, "TURN") {
			t.Errorf("D4: isolated worker sees parent message %q", msg.Text)
		}
	}
	if !strings.Contains(iso.Context, "ISO-PROMPT") || len(iso.Messages) != 1 || !strings.Contains(iso.Messages[0].Text, "goal of a") {
		t.Errorf("D4: isolated worker request = %q %+v", iso.Context, iso.Messages)
	}

	conv := m.requests("conv")[0]
	var users []string
	for _, msg := range conv.Messages {
		if msg.Role == model.User {
			users = append(users, msg.Text)
		}
		for _, c := range msg.Calls {
			if c.Name == "runBoard" {
				t.Error("D5: the pending runBoard call was inherited")
			}
		}
	}
	// Two whole turns: the last old turn and the current one, then the task.
	if len(users) != 3 || users[0] != "OLD-TURN-3" || users[1] != "NEW-TURN" || !strings.Contains(users[2], "goal of b") {
		t.Errorf("D5: conversation worker's user messages = %q", users)
	}
	if !strings.Contains(users[2], "iso result") {
		t.Errorf("D3: dependency result not handed on: %q", users[2])
	}
	// The current turn came whole: the read, the addTask calls and results.
	var inheritedCalls int
	for _, msg := range conv.Messages {
		inheritedCalls += len(msg.Calls)
	}
	if inheritedCalls != 4 {
		t.Errorf("D5: inherited %d calls, want the 4 completed ones of the current turn", inheritedCalls)
	}
}

// D6: sub streams worker items to the client but keeps them out of the
// host's history; primary also appends them to the history, after the
// runBoard result; {client:false, history:false} does neither.
func TestDelegationVisibility(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(team())
	res, m, events, err := runMulti(t, p, Options{RunsDir: t.TempDir()}, map[string][]step{
		"host": {
			read("team"),
			calls("addTask", add("s", "iso"), "addTask", add("p", "prim"), "addTask", add("q", "quiet")),
			call("runBoard", nil),
			say("done"),
		},
		"iso":   {call("team_echo", map[string]string{"text": "SUB-WORK"}), say("sub result")},
		"prim":  {say("PRIMARY-WORK")},
		"quiet": {say("QUIET-WORK")},
	})
	if err != nil {
		t.Fatal(err)
	}
	tagged := map[string]bool{}
	for _, e := range events {
		if e.Type == event.ToolResult && strings.Contains(e.Result, "SUB-WORK") {
			tagged["sub"] = e.Task == "s" && strings.HasSuffix(e.Agent, "iso")
		}
		if e.Type == event.Text && e.Text == "PRIMARY-WORK" {
			tagged["primary"] = e.Task == "p"
		}
		if e.Type == event.Text && e.Text == "QUIET-WORK" {
			t.Error("D6: a client:false worker's item reached the client")
		}
	}
	if !tagged["sub"] || !tagged["primary"] {
		t.Errorf("D6: client events tagged with task and agent: %v", tagged)
	}
	last := m.requests("host")[3]
	var sawPrimary bool
	for i, msg := range last.Messages {
		if strings.Contains(msg.Text, "SUB-WORK") && msg.Role != model.Tool {
			t.Error("D6: a sub worker's item entered the host history")
		}
		if msg.Role == model.Assistant && msg.Text == "PRIMARY-WORK" {
			sawPrimary = true
			if prev := last.Messages[i-1]; prev.Name != "runBoard" {
				t.Errorf("D6: primary item not right after the runBoard result: %+v", prev)
			}
		}
		if msg.Role == model.Tool && msg.Name == "team_echo" {
			t.Error("D6: a sub worker's tool result entered the host history")
		}
	}
	if !sawPrimary {
		t.Error("D6: the primary worker's item is missing from the host history")
	}
	_ = res
}

// D7: a worker sees the observations its flow policy allows — deps by
// default — and none with policy none.
func TestDelegationFlow(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(team())
	_, m, _, err := runMulti(t, p, Options{}, map[string][]step{
		"host": {
			read("team"),
			calls("addTask", add("a", "iso"), "addTask", add("b", "iso", "a"), "addTask", add("c", "conv", "a")),
			call("runBoard", nil),
			say("done"),
		},
		"a": {call("team_echo", map[string]string{"text": "OBSERVED"}), say("a done")},
		"b": {say("b done")},
		"c": {say("c done")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if b := m.requests("b")[0]; !strings.Contains(b.Context, "OBSERVED") || !strings.Contains(b.Context, "team_echo") {
		t.Errorf("D7 deps: b does not see a's tool call:\n%s", b.Context)
	}
	if c := m.requests("c")[0]; strings.Contains(c.Context, "OBSERVED") {
		t.Errorf("D7 none: c sees a's tool call:\n%s", c.Context)
	}
}

// D8 and D3: a worker that reaches max-steps fails with an error, its
// dependents stay pending and runBoard says blocked with the stranded task.
func TestDelegationMaxStepsBlocks(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(team())
	res, m, _, err := runMulti(t, p, Options{RunsDir: t.TempDir()}, map[string][]step{
		"host": {
			read("team"),
			calls("addTask", add("l", "loop"), "addTask", add("after", "iso", "l")),
			call("runBoard", nil),
			say("replanned"),
		},
		"loop": {call("team_echo", nil), call("team_echo", nil), call("team_echo", nil)},
		"iso":  {say("never")},
	})
	if err != nil {
		t.Fatal(err)
	}
	board := lastResult(m.requests("host")[3]).Text
	for _, want := range []string{`"blocked"`, "max-steps", `"after"`} {
		if !strings.Contains(board, want) {
			t.Errorf("runBoard result lacks %s: %s", want, board)
		}
	}
	if len(m.requests("iso")) != 0 {
		t.Error("a dependent of a failed task ran")
	}
	var saved map[string][]map[string]any
	data := readFile(t, res.Dir+"/board.json")
	if err := json.Unmarshal(data, &saved); err != nil || len(saved["tasks"]) != 2 {
		t.Errorf("board.json = %s (%v)", data, err)
	}
}

// Cancelling the run stops every worker promptly, leaves no goroutine
// behind and still writes a complete run record.
func TestDelegationCancel(t *testing.T) {
	before := runtime.NumGoroutine()
	p := project(team())
	started := make(chan struct{}, 8)
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.Agent == "" {
			switch req.Caller.Step {
			case 0:
				return read("team")(req), nil
			case 1:
				return calls("addTask", add("a", "iso"), "addTask", add("b", "iso"))(req), nil
			default:
				return call("runBoard", nil)(req), nil
			}
		}
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	r, err := New(p, Options{Model: m, RunsDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var res *Result
	go func() {
		var err error
		res, err = r.Execute(ctx, "")
		done <- err
	}()
	<-started
	<-started
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a cancelled run reported success")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not stop after cancel")
	}
	var sum runrecord.Summary
	if err := json.Unmarshal(readFile(t, res.Dir+"/run.json"), &sum); err != nil || sum.Status != runrecord.Interrupted {
		t.Errorf("run.json = %+v (%v)", sum, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines left behind", n-before)
	}
}

// A pipeline whose sink task fails fails the run: no coordinator is there
// to replan, and an empty answer would hide the failure.
func TestPipelineFailedSinkFailsRun(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(team())
	p.Workflow.Host = nil
	p.Workflow.Tasks = []spec.Task{{ID: "only", Goal: "g", Assignee: "team/loop"}}
	_, _, _, err := runMulti(t, p, Options{}, map[string][]step{
		"loop": {call("team_echo", nil), call("team_echo", nil), call("team_echo", nil)},
	})
	if err == nil || !strings.Contains(err.Error(), "task only failed") || !strings.Contains(err.Error(), "max-steps") {
		t.Errorf("err = %v", err)
	}
}

// W2 for history items: a worker stopped between its calls' results (a
// panic, a cancel) leaves calls without results; flushing its items into
// the host's history must not orphan them, or the host's next message
// would be refused.
func TestHistoryFlushNeverOrphans(t *testing.T) {
	testpar.UnlessRace(t)
	host := transcript.New(nil)
	for _, m := range []model.Message{
		{Role: model.User, Text: "go"},
		{Role: model.Assistant, Calls: []model.ToolCall{{ID: "rb", Name: "runBoard"}}},
		{Role: model.Tool, CallID: "rb", Name: "runBoard", Text: `{"ok":true}`},
	} {
		if err := host.AppendMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	hb := &hostBoard{host: &hostEnv{tr: host}, b: board.New(board.Options{})}
	if _, err := hb.b.Add(board.TaskSpec{ID: "w", Goal: "g"}); err != nil {
		t.Fatal(err)
	}
	item := hb.keepHistory("w")
	item(model.Message{Role: model.Assistant, Text: "two calls", Calls: []model.ToolCall{{ID: "x", Name: "a"}, {ID: "y", Name: "b"}}})
	item(model.Message{Role: model.Tool, CallID: "x", Name: "a", Text: "only the first answered"})
	hb.flushHistory()
	if err := host.AppendMessage(model.Message{Role: model.Assistant, Text: "next"}); err != nil {
		t.Fatalf("the host's next message was refused after the flush: %v", err)
	}
	for _, m := range host.Messages() {
		if m.CallID == "x" {
			t.Errorf("a result whose call left with its unanswered sibling was flushed: %+v", m)
		}
	}
}

// D7: a worker's flow observations are fixed at its dispatch. What another
// worker observes while it runs is not shown to it (its context block, the
// system prompt of its requests, never changes), so its requests keep a
// byte-identical prefix; a worker dispatched later sees it.
func TestFlowFixedAtDispatch(t *testing.T) {
	testpar.UnlessRace(t)
	s := team()
	s.Agents = append(s.Agents, spec.Agent{Name: "watch", Prompt: "WATCH", Flow: spec.Flow{Policy: spec.FlowRecent, Last: 8}, Tools: []string{"team_echo"}})
	p := project(s)
	bStarted, aRecorded := make(chan struct{}), make(chan struct{})
	wait := func(ch chan struct{}) {
		select {
		case <-ch:
		case <-time.After(20 * time.Second): // a guard against a hang, not a timing assertion
			t.Error("a worker never got to its step")
		}
	}
	_, m, _, err := runMulti(t, p, Options{}, map[string][]step{
		"host": {
			read("team"),
			calls("addTask", add("a", "iso"), "addTask", add("b", "watch"), "addTask", add("late", "watch", "a")),
			call("runBoard", nil),
			say("done"),
		},
		"a": {
			func(r *model.Request) *model.Response {
				wait(bStarted)
				return call("team_echo", map[string]string{"text": "OBSERVED-BY-A"})(r)
			},
			func(r *model.Request) *model.Response { close(aRecorded); return say("a done")(r) },
		},
		"b": {
			func(r *model.Request) *model.Response {
				close(bStarted)
				return call("team_echo", map[string]string{"text": "b1"})(r)
			},
			func(r *model.Request) *model.Response {
				wait(aRecorded)
				return call("team_echo", map[string]string{"text": "b2"})(r)
			},
			say("b done"),
		},
		"late": {say("late done")},
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests("b")
	if len(reqs) != 3 {
		t.Fatalf("b made %d requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if r.Context != reqs[0].Context {
			t.Errorf("b's request %d has another context block than its first:\n%s\nwant:\n%s", i+1, r.Context, reqs[0].Context)
		}
		if strings.Contains(r.Context, "OBSERVED-BY-A") {
			t.Errorf("b's request %d shows an observation made after b was dispatched", i+1)
		}
	}
	if late := m.requests("late"); len(late) == 0 || !strings.Contains(late[0].Context, "OBSERVED-BY-A") {
		t.Error("a worker dispatched after a's call does not see it (policy recent)")
	}
}
