package engine

import (
	"context"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/artifact"
	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/supply"
	"github.com/fsdrun/fsd/tool"
)

// workerEnv is a board worker's world: its agent's prompt, the flow
// observations it was given, the skill tools its agent may call, and —
// when its agent lists skills: — a catalog of those skills it reads and
// loads as the host does.
type workerEnv struct {
	box    *toolbox
	log    zerolog.Logger
	skill  *spec.Skill // nil for the default worker
	block  string
	defs   []model.ToolDef
	byName map[string]skillTool
	state  *tool.MemKV // nil until a skill tool is called
	// arts answers reads of results kept as artifacts (without skills,
	// a worker loads none, so only those are readable).
	arts *artifact.Store
	// skills is the worker's own catalog (its agent's skills:): the
	// host's world with no prompt and no board, over a manager that
	// offers those skills alone, within max-loaded-skills. nil without.
	skills *hostEnv
}

// offer adds t to the tools the worker may call; byName is made by the
// first (a worker of an agent with no tools makes none).
func (w *workerEnv) offer(t skillTool) {
	d := t.Def()
	w.defs = append(w.defs, d)
	if w.byName == nil {
		w.byName = map[string]skillTool{}
	}
	w.byName[d.Name] = t
}

// skillDirs are the folders the reading built-ins may read: the agent's
// skill's and those of the skills it loads (skills:).
func (w *workerEnv) skillDirs() []string {
	var dirs []string
	if w.skill != nil {
		dirs = append(dirs, w.skill.Dir)
	}
	if w.skills != nil {
		dirs = append(dirs, w.skills.mgr.skillDirs()...)
	}
	return dirs
}

func (w *workerEnv) prepare(ctx context.Context) {
	if w.skills != nil {
		w.skills.prepare(ctx)
	}
}

// contextBlock is the agent's prompt (with its observations and output
// schema), then its catalog and loaded skills as the host's block has them.
func (w *workerEnv) contextBlock() (string, string) {
	if w.skills == nil {
		return w.block, ""
	}
	block, status := w.skills.contextBlock()
	return w.block + "\n\n" + block, status
}

// tools are the agent's own tools, then read_skill, the readers and the
// loaded skills' tools as the host has them.
func (w *workerEnv) tools() []model.ToolDef {
	if w.skills == nil {
		return w.defs
	}
	return append(slices.Clip(w.defs), w.skills.tools()...)
}

func (w *workerEnv) loaded(id string) bool { return w.skills == nil || w.skills.loaded(id) }

// current: what a worker inherits was checked at dispatch; what it loads
// itself, its catalog says.
func (w *workerEnv) current(id, rev string) bool { return w.skills == nil || w.skills.current(id, rev) }
func (w *workerEnv) settle()                     {}

func (w *workerEnv) command(name string) (bool, bool) {
	t, ok := w.byName[name]
	if !ok && w.skills != nil {
		return w.skills.command(name)
	}
	if !ok || !t.external() {
		return false, false
	}
	return true, t.failsInDoubt()
}

func (w *workerEnv) approval(c model.ToolCall) approval.Tool {
	t, ok := w.byName[c.Name]
	if !ok && w.skills != nil {
		return w.skills.approval(c)
	}
	if !ok {
		return approval.Tool{}
	}
	a := t.approval(w.skill)
	if w.skill != nil { // the default worker has no skill to grant
		a.Grant = w.box.grantOf([]*spec.Skill{w.skill}, c, t)
	}
	return a
}

func (w *workerEnv) call(ctx context.Context, c model.ToolCall) model.ToolResult {
	t, ok := w.byName[c.Name]
	if !ok && w.skills != nil {
		return w.skills.call(ctx, c)
	}
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
	var kv tool.KV
	if w.skill != nil { // the default worker has only built-ins
		if w.state == nil {
			// Made by the first call (its generator calls one at a
			// time): most tasks call no tool.
			w.state = tool.NewMemKV()
		}
		kv = t.kv(w.state, w.box.store(w.skill.ID))
	}
	res := t.Call(ctx, c.Args, kv)
	return model.ToolResult{Text: res.Text, IsError: res.IsError}
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
	add := w.offer
	for _, t := range tools {
		if want[t.Def().Name] {
			add(t)
		}
	}
	if mcpWanted && len(s.MCP) > 0 {
		mt, notes := w.box.mcp.Acquire(ctx, s)
		release = func() { w.box.mcp.Release(s) }
		for _, n := range notes {
			w.log.Warn().Str("skill", s.ID).Msg(w.box.secrets.String(n))
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
	// Sized first and written without fmt: one allocation for a task's
	// message, which every task makes.
	size := len("Task : \n") + len(t.ID) + len(t.Goal)
	if t.Input != "" {
		size += len("\nInput:\n\n") + len(t.Input)
	}
	for _, d := range deps {
		size += len("\nResult of task  ():\n\n") + len(d.TaskID) + len(d.Agent) + len(d.Result)
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString("Task ")
	b.WriteString(t.ID)
	b.WriteString(": ")
	b.WriteString(t.Goal)
	b.WriteByte('\n')
	if t.Input != "" {
		b.WriteString("\nInput:\n")
		b.WriteString(t.Input)
		b.WriteByte('\n')
	}
	for _, d := range deps {
		b.WriteString("\nResult of task ")
		b.WriteString(d.TaskID)
		b.WriteString(" (")
		b.WriteString(d.Agent)
		b.WriteString("):\n")
		b.WriteString(d.Result)
		b.WriteByte('\n')
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
