package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/artifact"
	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/supply"
	"github.com/fsdrun/fsd/tokens"
	"github.com/fsdrun/fsd/tool"
	"github.com/fsdrun/fsd/transcript"
	"github.com/fsdrun/fsd/visibility"
)

// workerEnv is a board worker's world: its agent's prompt, the flow
// observations it was given, and the skill tools its agent may call.
type workerEnv struct {
	box    *toolbox
	log    zerolog.Logger
	skill  *spec.Skill // nil for the default worker
	block  string
	defs   []model.ToolDef
	byName map[string]skillTool
	state  *tool.MemKV
	// arts answers reads of results kept as artifacts (a worker loads no
	// skill, so only those are readable).
	arts *artifact.Store
}

func (w *workerEnv) prepare(context.Context) {}
func (w *workerEnv) contextBlock() string    { return w.block }
func (w *workerEnv) tools() []model.ToolDef  { return w.defs }
func (w *workerEnv) loaded(id string) bool   { return true }
func (w *workerEnv) settle()                 {}

func (w *workerEnv) command(name string) (bool, bool) {
	t, ok := w.byName[name]
	if !ok || !t.external() {
		return false, false
	}
	return true, t.failsInDoubt()
}

func (w *workerEnv) approval(c model.ToolCall) toolApproval {
	t, ok := w.byName[c.Name]
	if !ok {
		return toolApproval{}
	}
	return t.approval(w.skill)
}

func (w *workerEnv) call(ctx context.Context, c model.ToolCall) model.ToolResult {
	t, ok := w.byName[c.Name]
	if !ok && artifact.IsReader(c.Name) && w.arts != nil {
		text, _, err := w.arts.Call(c.Name, c.Args, func(string) bool { return false })
		if err != nil {
			return model.ToolResult{Text: err.Error(), IsError: true}
		}
		return model.ToolResult{Text: text}
	}
	if !ok {
		return model.ToolResult{Text: "Unknown tool: " + c.Name, IsError: true}
	}
	res := t.Call(ctx, c.Args, t.kv(w.state, w.box.store(w.skill.ID)))
	return model.ToolResult{Text: res.Text, IsError: res.IsError}
}

// runTask runs one task on its worker: a fresh generator with its own
// transcript (D4), fed by context supply (D5) and flow (D7), its items
// routed by visibility (D6), bounded by max-steps (D8). Each step is a
// function below, in that order.
func (hb *hostBoard) runTask(ctx context.Context, t *board.Task, deps []board.DepResult) (string, error) {
	skill, agent, ok := hb.resolve(t.Assignee)
	if !ok {
		return "", fmt.Errorf("assignee %q is not an agent of any skill found", t.Assignee)
	}
	if err := hb.renderStatic(t, deps); err != nil {
		return "", err
	}
	w, a, release, err := hb.workerWorld(ctx, t, skill, agent)
	if err != nil {
		return "", err
	}
	defer release()
	typed, err := newTypedOutput(a)
	if err != nil {
		return "", err
	}
	if typed != nil {
		w.block += typed.prompt()
	}
	g, journal, err := hb.workerGenerator(t, w, a, agent)
	if err != nil {
		return "", err
	}
	g.output = typed
	g.caller.Deps = depsJSON(deps)
	if err := hb.inherit(g.tr, a); err != nil {
		return "", err
	}
	if err := g.add(model.Message{Role: model.User, Text: taskMessage(t, deps)}); err != nil {
		return "", err
	}
	g.replay = newReplay(journal, len(g.tr.Messages()))
	answer, err := g.loop(ctx) // D8: a final answer, an error or max-steps
	if g.endReplayed {
		hb.restated(t.ID) // its end is the journal's: task.completed restates it
	}
	if err == nil {
		// Flow policy `all` shows completed tasks' observations only.
		hb.workers.ledger.Done(t.ID)
		if typed != nil {
			t.Output = json.RawMessage(answer)
		}
	}
	return answer, err
}

// workerWorld sets a worker up from its fully defaulted agent (the
// default worker's when the task names none): its prompt, the flow
// observations it may see (D7) and the tools it may call (D4). release
// lets go of the MCP servers its tools hold.
func (hb *hostBoard) workerWorld(ctx context.Context, t *board.Task, skill *spec.Skill, agent *spec.Agent) (*workerEnv, spec.Agent, func(), error) {
	wd := hb.workers
	w := &workerEnv{box: wd.box, log: hb.log, skill: skill, byName: map[string]skillTool{}, state: tool.NewMemKV(), arts: wd.gen.arts}
	a, release := spec.DefaultAgent(), func() {}
	if agent != nil {
		a = agent.WithDefaults()
		var err error
		if release, err = w.allow(ctx, skill, a.Tools); err != nil {
			return nil, a, release, err
		}
	}
	var prompt strings.Builder
	prompt.WriteString(strings.TrimSpace(a.Prompt))
	var ancestors []string
	if a.Flow.Policy == spec.FlowAncestors {
		ancestors = hb.b.Ancestors(t.ID)
	}
	if obs := wd.ledger.Select(a.Flow, t.ID, t.Deps, ancestors, tokens.Count); len(obs) > 0 {
		prompt.WriteString("\n\n<observations>\n")
		prompt.WriteString(supply.RenderObservations(obs))
		prompt.WriteString("</observations>\n")
	}
	w.block = prompt.String()
	return w, a, release, nil
}

// workerGenerator builds the worker's generator on its own transcript
// (D4), bounded by its max-steps (D8), its items routed by its visibility
// (D6) and every tool result recorded in the run's ledger (D7).
func (hb *hostBoard) workerGenerator(t *board.Task, w *workerEnv, a spec.Agent, agent *spec.Agent) (*generator, *genJournal, error) {
	wd := hb.workers
	tr, journal, err := wd.transcript(t.ID, max(t.Attempts, 1))
	if err != nil {
		return nil, nil, err
	}
	maxSteps := wd.limits.MaxSteps
	if a.MaxSteps > 0 {
		maxSteps = a.MaxSteps
	}
	agentName := t.Agent()
	name := "task:" + t.ID
	if t.Attempts > 1 {
		name += "#" + strconv.Itoa(t.Attempts)
	}
	g := &generator{
		genDeps: wd.gen, model: wd.model, tr: tr, env: w, name: name, recName: transcriptName(t.ID, max(t.Attempts, 1)),
		caller: model.Caller{Agent: agentName, TaskID: t.ID, TaskGoal: t.Goal, Input: t.Input,
			Model: hb.cat.modelFor(agent, false)},
		maxMessages: wd.limits.MaxTranscriptMessages, maxSteps: maxSteps,
	}
	if a.Visibility.Client {
		g.streamText = func(delta string) {
			hb.ev.emit(event.Event{Type: event.Text, Task: t.ID, Agent: agentName, Text: delta, Delta: true})
		}
		g.streamReset = func() {
			hb.ev.emit(event.Event{Type: event.TextReset, Task: t.ID, Agent: agentName})
		}
	}
	router := visibility.New(a.Visibility, g.restating(hb.ev.stamped), visibility.Tags{Run: hb.ev.runID, Task: t.ID, Agent: agentName}, hb.keepHistory(t.ID))
	g.item = func(msg model.Message) {
		router.Item(msg)
		if msg.Role == model.Tool {
			wd.ledger.Record(observe(tr.Messages(), msg, t.ID, agentName))
		}
	}
	return g, journal, nil
}

// restating marks the events sent to sink while the generator restates
// journaled work (a resume) as replayed.
func (g *generator) restating(sink func(event.Event)) event.Sink {
	return event.SinkFunc(func(e event.Event) {
		e.Replayed = e.Replayed || g.replaying
		sink(e)
	})
}

// inherit gives a conversation-supply worker the parent's last N whole
// turns as of dispatch (D5); an isolated worker inherits nothing (D4).
func (hb *hostBoard) inherit(tr *transcript.Transcript, a spec.Agent) error {
	if a.ContextSupply != spec.SupplyConversation {
		return nil
	}
	inherited := supply.Conversation(hb.parent(), a.Turns)
	if hb.host != nil {
		// H4 holds for what a worker inherits too: reader results of
		// skills the host has unloaded arrive as stubs. (The host is
		// blocked in runBoard, so its loaded set is stable here.)
		inherited = reclaim(inherited, hb.host.mgr.isLoaded)
	}
	for _, msg := range inherited {
		if err := tr.AppendMessage(msg); err != nil {
			return err
		}
	}
	return nil
}

// keepHistory returns the buffer of one task's items bound for the
// parent's history (D6).
func (hb *hostBoard) keepHistory(task string) func(model.Message) {
	return func(m model.Message) {
		if m.Role == model.User {
			return // the task message is the board's, not the worker's output
		}
		hb.mu.Lock()
		defer hb.mu.Unlock()
		if hb.history == nil {
			hb.history = map[string][]model.Message{}
		}
		hb.history[task] = append(hb.history[task], m)
	}
}

// allow compiles the agent's allowed tools from its skill. Entries
// SERVER/TOOL and SERVER/* name tools of the skill's MCP servers, which
// are acquired for the task: release ends that use.
func (w *workerEnv) allow(ctx context.Context, s *spec.Skill, names []string) (release func(), err error) {
	release = func() {}
	if len(names) == 0 {
		return release, nil
	}
	tools, err := w.box.compile(s)
	if err != nil {
		return release, err
	}
	want := map[string]bool{}
	mcpWanted := false
	for _, n := range names {
		want[n] = true
		mcpWanted = mcpWanted || strings.Contains(n, "/")
	}
	add := func(t skillTool) {
		d := t.Def()
		w.defs = append(w.defs, d)
		w.byName[d.Name] = t
	}
	for _, t := range tools {
		if want[t.Def().Name] {
			add(t)
		}
	}
	if mcpWanted && len(s.MCP) > 0 {
		mt, notes := w.box.mcp.Acquire(ctx, s)
		release = func() { w.box.mcp.Release(s) }
		for _, n := range notes {
			w.log.Warn().Str("skill", s.ID).Msg(n)
		}
		for _, t := range mt {
			if want[t.Server()+"/*"] || want[t.Server()+"/"+t.Remote()] {
				add(mcpTool(s, t))
			}
		}
	}
	return release, nil
}

// taskMessage is the worker's first user message: its goal, its input and
// its dependencies' results. It starts "Task ID: ": the run record finds
// it so (runrecord, for a remote task's steps), after inherited turns.
func taskMessage(t *board.Task, deps []board.DepResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task %s: %s\n", t.ID, t.Goal)
	if t.Input != "" {
		fmt.Fprintf(&b, "\nInput:\n%s\n", t.Input)
	}
	for _, d := range deps {
		fmt.Fprintf(&b, "\nResult of task %s (%s):\n%s\n", d.TaskID, d.Agent, d.Result)
	}
	return b.String()
}

// observe builds the ledger entry of a tool result from the call that
// made it.
func observe(msgs []model.Message, res model.Message, task, agent string) supply.Observation {
	o := supply.Observation{Task: task, Agent: agent, Tool: res.Name, Result: res.Text, IsError: res.IsError}
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, c := range msgs[i].Calls {
			if c.ID == res.CallID {
				o.Args = c.Args
				return o
			}
		}
	}
	return o
}
