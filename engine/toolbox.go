package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/proc"
	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/internal/sandbox"
	"github.com/fsdrun/fsd/mcptool"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tool"
	"github.com/fsdrun/fsd/workspace"
)

// toolbox compiles skill tools, keeps the run-wide stores and the MCP
// servers: what the skill manager and workers need to call a skill's tools. It is shared by
// every generator of a run and safe for concurrent use.
type toolbox struct {
	// trusted says whether a skill's command tools may run; nil trusts all.
	trusted func(s *spec.Skill) bool
	// mcp runs the skills' MCP servers, shared by every load of the run.
	mcp *mcptool.Pool
	// refusal is what an untrusted skill's command tools answer instead of
	// the advice to pass --trust ("": that advice).
	refusal string
	// secrets are the run's (or the attempt's): compiling a skill adds the
	// values its programs take from the environment.
	secrets *redact.Set
	// ws is the run's workspace (the attempt's, on a worker): the working
	// folder of every program a skill's tools start, and the built-in
	// tools' folder. nil until the run opens it (fsd context opens none).
	ws *workspace.Workspace
	// hide are the run records' folders, hidden from every program the
	// run starts (Run.records).
	hide []string
	// workflow's sandbox settings apply to every program (see
	// sandboxFor); a worker has none.
	workflow *spec.Workflow
	// wrap replaces sandbox.Wrap in tests; nil is sandbox.Wrap.
	wrap proc.Wrap

	mu     sync.Mutex
	stores map[string]*tool.MemKV // skill id -> run-wide store (L4)
	tools  map[*spec.Skill][]skillTool
}

func newToolbox(trusted func(*spec.Skill) bool, secrets *redact.Set) *toolbox {
	if secrets == nil {
		secrets = redact.NewSet()
	}
	return &toolbox{trusted: trusted, secrets: secrets, stores: map[string]*tool.MemKV{}, tools: map[*spec.Skill][]skillTool{}}
}

// callable is what the engine needs of a tool a skill brings: a command,
// reply, state or store tool (tool.Tool) or a tool of one of its MCP
// servers (mcptool.Tool) look the same to it.
type callable interface {
	Def() model.ToolDef
	Call(ctx context.Context, args json.RawMessage, kv tool.KV) tool.Result
}

// kindMCP marks a tool of a skill's MCP server: like a command, it acts
// outside fsd, so resume uses its journaled result instead of calling it.
const kindMCP spec.RunKind = "mcp"

// skillTool is a skill's tool and its kind (which store it uses, whether
// resume may repeat it).
type skillTool struct {
	callable
	kind spec.RunKind
	// approve is the tool's own approval policy (its MCP server's for an
	// MCP tool); "" defers to its skill's and the workflow's.
	approve spec.Approve
	// effect: a built-in that changes something (Bash, Write, Edit).
	effect bool
}

// external reports whether a call acts outside fsd (a program, an MCP
// server, a built-in tool over the workspace): on resume its journaled
// result stands in for it.
//
// R14: a built-in's journaled result stands in for it on resume.
func (t skillTool) external() bool {
	return t.kind == spec.RunCommand || t.kind == kindMCP || t.kind == kindBuiltin
}

// failsInDoubt reports whether a call in flight at a crash answers an
// error on resume instead of running again (a command's on-interrupt:
// fail). An MCP call in doubt is made again, like a command's default.
func (t skillTool) failsInDoubt() bool {
	f, ok := t.callable.(interface{ FailsInDoubt() bool })
	return ok && f.FailsInDoubt()
}

// mcpTool is a skill's MCP tool, with its server's approval policy.
func mcpTool(s *spec.Skill, t *mcptool.Tool) skillTool {
	st := skillTool{callable: t, kind: kindMCP}
	if srv, ok := s.MCPServer(t.Server()); ok {
		st.approve = srv.Approve
	}
	return st
}

// approval is what a call of t declares about approval, s its skill. A
// call that would only answer the untrusted skill's refusal runs nothing:
// asking a person to approve it would be for nothing.
//
// A9: a call that would only be refused asks nobody.
func (t skillTool) approval(s *spec.Skill) approval.Tool {
	if r, ok := t.callable.(interface{ Refuses() bool }); ok && r.Refuses() {
		return approval.Tool{}
	}
	if t.kind == kindBuiltin {
		// The workflow's: its approve: alone applies, to those that act.
		return approval.Tool{External: t.effect, Input: t.Def().Parameters}
	}
	return approval.Tool{Own: t.approve, Skill: s.Approve, External: t.external(), Input: t.Def().Parameters}
}

// kv picks the store a call of t works on: the load's state, or the
// skill's run-wide store (L4).
func (t skillTool) kv(state, store tool.KV) tool.KV {
	switch t.kind {
	case spec.RunState:
		return state
	case spec.RunStore:
		return store
	}
	return nil
}

// store returns the run-wide store of a skill (L4).
func (tb *toolbox) store(id string) *tool.MemKV {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	kv, ok := tb.stores[id]
	if !ok {
		kv = tool.NewMemKV()
		tb.stores[id] = kv
	}
	return kv
}

// compile compiles a skill's tools once per manifest version.
//
// T3: trust is decided per skill when its tools are compiled.
func (tb *toolbox) compile(s *spec.Skill) ([]skillTool, error) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if ts, ok := tb.tools[s]; ok {
		return ts, nil
	}
	// Before any of its programs can print them.
	tb.secrets.Add(skillSecrets(s)...)
	var ts []skillTool
	for _, t := range s.Tools {
		ct, err := tool.Compile(t, s.Dir, tb.programOptions(s, t.Run.Sandbox)...)
		if err != nil {
			// tool.Compile names the tool ("tool greet: reply: …").
			return nil, fmt.Errorf("skill %s: %w", s.ID, err)
		}
		ts = append(ts, skillTool{callable: ct, kind: t.Run.Kind, approve: t.Approve})
	}
	tb.tools[s] = ts
	return ts, nil
}

// workDir is the workspace folder, "" when none is open.
func (tb *toolbox) workDir() string {
	if tb.ws == nil {
		return ""
	}
	return tb.ws.Dir()
}

// sandboxFor is the sandbox of a program of skill s whose own setting is
// own: spec.SandboxFor with the run's workspace; nil runs it unconfined
// (the workflow's `sandbox: off`).
func (tb *toolbox) sandboxFor(s *spec.Skill, own *spec.Sandbox) *sandbox.Policy {
	p := spec.SandboxFor(tb.workflow, s, own)
	if p != nil {
		p.Workspace, p.Hide = tb.workDir(), tb.hide
	}
	return p
}

// programOptions are the tool options every program of skill s runs
// with: its trust, its workspace and sandbox, the run's mask.
func (tb *toolbox) programOptions(s *spec.Skill, own *spec.Sandbox) []tool.Option {
	opts := []tool.Option{tool.WithTrust(tb.isTrusted(s)), tool.WithSkill(s.ID), tool.WithMask(tb.secrets.String),
		tool.WithWorkspace(tb.workDir()), tool.WithSandbox(tb.sandboxFor(s, own)), tool.WithWrap(tb.wrap)}
	if tb.refusal != "" {
		opts = append(opts, tool.WithRefusal(tb.refusal))
	}
	return opts
}

// newMCP is the pool of the MCP servers of the toolbox's skills, their
// stdio servers sandboxed as its other programs are.
func (tb *toolbox) newMCP(o mcptool.Options) *mcptool.Pool {
	o.Sandbox = func(s *spec.Skill, m *spec.MCPServer) *sandbox.Policy { return tb.sandboxFor(s, m.Sandbox) }
	o.Wrap = tb.wrap
	return mcptool.NewPool(o)
}

func (tb *toolbox) isTrusted(s *spec.Skill) bool {
	return tb.trusted == nil || tb.trusted(s)
}

// trustTier names the trust tier shown in inline envelopes.
func (tb *toolbox) trustTier(s *spec.Skill) string {
	if tb.isTrusted(s) {
		return "trusted"
	}
	return "untrusted"
}

// emitter stamps events with the run and the time and sends them to the
// sink: what every part of a run that reports events holds, instead of
// the run itself.
type emitter struct {
	runID string
	now   func() time.Time
	// sink is set when the run starts (the record's sink joins it then).
	sink event.Sink
	// quiet holds every event back while a session's next turn restates
	// the turns before it: they were reported when they ran.
	quiet bool
	// mu makes every sink see the run's events in one order, the order
	// of events.jsonl: fsd serve numbers the events it streams live by
	// their line in the record, so a client reconnecting after a restart
	// resumes at the right one.
	mu sync.Mutex
}

// emit stamps e and sends it.
func (em *emitter) emit(e event.Event) {
	e.Time = em.now()
	e.Run = em.runID
	em.stamped(e)
}

// Emit is stamped: an emitter is the event.Sink of a run's stamped
// events.
func (em *emitter) Emit(e event.Event) { em.stamped(e) }

// stamped sends an event that already carries its time and run.
func (em *emitter) stamped(e event.Event) {
	em.mu.Lock()
	defer em.mu.Unlock()
	if em.sink != nil && !em.quiet {
		em.sink.Emit(e)
	}
}
