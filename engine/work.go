package engine

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/artifact"
	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/mcptool"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tool"
	"github.com/fsdrun/fsd/visibility"
)

// WorkOptions are what a worker process brings to a task: its model, the
// skill the task's agent belongs to (loaded by the worker), its own trust
// decision and where the task's events go.
type WorkOptions struct {
	Model model.Model
	// Skill is the task's skill; nil for the default worker.
	Skill *spec.Skill
	// Trusted says whether the skill's command tools and stdio MCP servers
	// may run; nil trusts all (a worker passes its own --trust).
	Trusted func(*spec.Skill) bool
	// Refusal is what a command tool of an untrusted skill answers ("":
	// the advice to run fsd with --trust).
	Refusal string
	// Sink receives the task's events, stamped with the task's run.
	Sink event.Sink
	// Approver takes the task's calls that need approval to the run's
	// coordinator, which answers them as it answers its own; nil rejects
	// them (never run unapproved) and the model reads why.
	Approver Approver
	Logger   zerolog.Logger
	// Rand is the source of artifact handles; nil is crypto/rand.
	Rand io.Reader
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Journal journals the task's transcript, entry by entry, as a run
	// record's journal.jsonl does locally (a worker's: a JetStream
	// subject, natsboard.JournalLog); nil keeps it in memory only. Steps
	// wait for it as the task's Durability says.
	Journal journal.Log
	// Journaled are the entries earlier deliveries of this attempt
	// journaled (a worker reads them from its journal), each a transcript entry's JSON.
	// Work resumes after them as a local resume does: journaled model
	// responses and command results are reused, not asked or run again,
	// and an in-doubt call follows journal.Plan. Journal must already
	// hold them: they are not written again.
	Journaled []json.RawMessage
}

// Work runs one task attempt the way a board worker of the coordinator's
// process would (D4-D8): a fresh generator on the task message, the
// supplied turns and observations, the agent's tools; resumed after
// o.Journaled when an earlier delivery journaled steps. The outcome is
// the result; a task failure is RemoteResult.Error, never a panic.
func Work(ctx context.Context, t *RemoteTask, o WorkOptions) (res *RemoteResult) {
	res = &RemoteResult{Model: t.Model}
	defer func() {
		if p := recover(); p != nil {
			res.Error = fmt.Sprintf("internal error: %v", p)
		}
	}()
	if o.Model == nil {
		res.Error = "worker: no model"
		return res
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if !t.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, t.Deadline)
		defer cancel()
	}
	a := spec.DefaultAgent()
	if t.Skill != "" {
		if o.Skill == nil || o.Skill.ID != t.Skill {
			res.Error = fmt.Sprintf("worker: skill %q was not loaded", t.Skill)
			return res
		}
		ag, ok := o.Skill.Agent(t.Agent)
		if !ok {
			res.Error = fmt.Sprintf("skill %s has no agent %q", t.Skill, t.Agent)
			return res
		}
		a = ag.WithDefaults()
	}
	durability, err := spec.ParseDurability(string(t.Durability))
	if err != nil {
		res.Error = err.Error()
		return res
	}
	resumed, err := rawGenJournal(o.Journaled)
	if err != nil {
		res.Error = fmt.Sprintf("worker: the task's journal: %v", err)
		return res
	}
	ev := &emitter{runID: t.Run, now: o.Now, sink: o.Sink}
	arts := artifact.NewStore(o.Rand)
	box := newToolbox(o.Trusted)
	box.refusal = o.Refusal
	box.mcp = mcptool.NewPool(mcptool.Options{Trusted: o.Trusted, Idle: -1, Spool: workSpool{arts}, Logger: o.Logger})
	defer box.mcp.Close()
	w := &workerEnv{box: box, log: o.Logger, skill: o.Skill, byName: map[string]skillTool{}, state: tool.NewMemKV(), arts: arts}
	if t.Skill != "" {
		release, err := w.allow(ctx, o.Skill, a.Tools)
		defer release()
		if err != nil {
			res.Error = err.Error()
			return res
		}
	}
	w.block = strings.TrimSpace(a.Prompt)
	if t.Observations != "" {
		w.block += "\n\n<observations>\n" + t.Observations + "</observations>\n"
	}
	typed, err := newTypedOutput(a)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	if typed != nil {
		w.block += typed.prompt()
	}
	tr := journaledTranscript(o.Journal, journal.Gen{Task: t.Task, Attempt: max(t.Attempt, 1)}, resumed)
	for _, m := range t.Turns {
		if err := tr.AppendMessage(m); err != nil {
			res.Error = fmt.Sprintf("supplied turns: %v", err)
			return res
		}
	}
	bt := &board.Task{ID: t.Task, Goal: t.Goal, Input: t.Input, Assignee: t.Assignee, Attempts: t.Attempt}
	agentName := bt.Agent()
	name := "task:" + t.Task
	if t.Attempt > 1 {
		name += "#" + strconv.Itoa(t.Attempt)
	}
	acct := &account{tasks: map[string]*tally{}, agents: map[string]*tally{}}
	g := &generator{
		genDeps: genDeps{runID: t.Run, emit: ev.emit, acct: acct, tokens: sharedTokens, log: o.Logger, now: o.Now,
			arts: arts, maxResult: t.Limits.MaxResultTokens, appr: workApprovals(t, o.Approver, ev.emit, o), durability: durability},
		model: o.Model, tr: tr, env: w, name: name, recName: transcriptName(t.Task, max(t.Attempt, 1)),
		caller:      model.Caller{Agent: agentName, TaskID: t.Task, TaskGoal: t.Goal, Input: t.Input, Model: t.Model},
		maxMessages: max(t.Limits.MaxTranscriptMessages, 1), maxSteps: max(t.Limits.MaxSteps, 1),
		output: typed,
	}
	g.caller.Deps = depsJSON(t.Deps)
	if a.Visibility.Client {
		g.streamText = func(delta string) {
			ev.emit(event.Event{Type: event.Text, Task: t.Task, Agent: agentName, Text: delta, Delta: true})
		}
		g.streamReset = func() { ev.emit(event.Event{Type: event.TextReset, Task: t.Task, Agent: agentName}) }
	}
	keep := func(m model.Message) {
		if m.Role != model.User {
			res.Items = append(res.Items, m)
		}
	}
	router := visibility.New(a.Visibility, g.restating(ev.stamped), visibility.Tags{Run: t.Run, Task: t.Task, Agent: agentName}, keep)
	g.item = func(msg model.Message) {
		router.Item(msg)
		if msg.Role == model.Tool {
			res.Observations = append(res.Observations, observe(tr.Messages(), msg, t.Task, agentName))
		}
	}
	if err := g.add(model.Message{Role: model.User, Text: taskMessage(bt, t.Deps)}); err != nil {
		res.Error = err.Error()
		return res
	}
	g.replay = newReplay(resumed, len(g.tr.Messages()))
	answer, err := g.loop(ctx)
	res.Usage, _ = acct.total()
	if !a.Visibility.History {
		res.Items = nil
	}
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Result = answer
	return res
}
