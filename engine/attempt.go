package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/transcript"
	"github.com/fsdrun/fsd/visibility"
	"github.com/fsdrun/fsd/work"
)

// attemptDeps are what one task attempt runs with. Work builds them from
// a worker process's own (work.Options); the in-process dispatcher from
// the run's: its model, toolbox and MCP servers, artifacts, approvals,
// record, and an account that books into the run's.
type attemptDeps struct {
	// gen is the generator's: its account is the attempt's own (its
	// total is Outcome.Usage), its emit stamps with ev.
	gen   genDeps
	ev    *emitter
	model model.Model
	// skill is the attempt's skill; nil for the default worker.
	skill *spec.Skill
	box   *toolbox
	// skills makes the worker's catalog when its agent lists skills:
	// (Run.skillsEnv); nil where the run's catalog is not (a worker
	// process).
	skills func(only []string) *hostEnv
	// open opens the attempt's transcript, journaled where the attempt
	// runs, and the journal a resumed attempt goes on after (nil: none).
	open func() (*transcript.Transcript, *genReplay, error)
}

// runAttempt runs one task attempt to its outcome, however the attempt
// was delivered: a fresh generator on its own transcript (D4) holding the
// supplied turns (D5) and the task message, its agent's prompt with the
// flow observations it was given (D7) and the tools its agent may call,
// its items routed by visibility (D6) and its tool results collected for
// the run's ledger, bounded by max-steps (D8); resumed after the journal
// its transcript opens with. A task failure is Outcome.Error, never a
// panic.
//
// N1: every attempt, in process or on a worker, runs here.
//
// G1: the generator, its transcript and its closures live in this call
// only; what outlives it is the Outcome (result, usage), so a finished
// task holds no conversation.
func runAttempt(ctx context.Context, t *work.Attempt, d attemptDeps) (res *work.Outcome) {
	res = &work.Outcome{Model: t.Model}
	defer func() {
		if p := recover(); p != nil {
			res.Error = fmt.Sprintf("internal error: %v", p)
		}
	}()
	if !t.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, t.Deadline)
		defer cancel()
	}
	g, a, resumed, release, err := d.prepare(ctx, t, res)
	defer release()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	g.replay = newCursor(resumed, len(g.tr.Messages()))
	answer, err := g.loop(ctx)
	res.Replayed = g.endReplayed
	res.Usage, _ = g.acct.total()
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

// prepare sets an attempt up to its first model call: its worker, its
// transcript with the supplied turns, a generator whose items go to res
// (history items, observations) and the events, and the task message.
// release lets go of what the worker holds.
//
// D9: a worker gets its agent's prompt, the task message and its tools,
// and with skills: a catalog of those skills alone.
func (d attemptDeps) prepare(ctx context.Context, t *work.Attempt, res *work.Outcome) (g *generator, a spec.Agent, resumed *genReplay, release func(), err error) {
	release = func() {}
	durability, err := spec.ParseDurability(string(t.Durability))
	if err != nil {
		return nil, a, nil, release, err
	}
	w, a, typed, release, err := d.worker(ctx, t)
	if err != nil {
		return nil, a, nil, release, err
	}
	tr, resumed, err := d.open()
	if err != nil {
		return nil, a, nil, release, err
	}
	if w.skills != nil {
		w.skills.tr = tr // context lines of its loads go in its transcript
	}
	for _, m := range t.Turns {
		if err := tr.AppendMessage(m); err != nil {
			return nil, a, nil, release, fmt.Errorf("supplied turns: %v", err)
		}
	}
	bt := &board.Task{ID: t.Task, Goal: t.Goal, Input: t.Input, Assignee: t.Assignee, Attempts: t.Number}
	agentName := bt.Agent()
	gd := d.gen
	gd.maxResult = t.Limits.MaxResultTokens
	gd.readers, gd.shed = t.Limits.Readers, t.Limits.WindowShed
	gd.durability = durability
	// The generator and what routes its items are one allocation.
	ag := &struct {
		g     generator
		items attemptItems
	}{}
	g = &ag.g
	*g = generator{
		genDeps: gd, model: d.model, tr: tr, env: w, name: t.Name(), recName: transcriptName(t.Task, max(t.Number, 1)),
		caller:      model.Caller{Agent: agentName, TaskID: t.Task, TaskGoal: t.Goal, Input: t.Input, Model: t.Model},
		maxMessages: max(t.Limits.MaxTranscriptMessages, 1), maxSteps: max(t.Limits.MaxSteps, 1),
		output: typed,
	}
	g.caller.Deps = depsJSON(t.Deps)
	ev := d.ev // not d: a closure over d would copy all of it to the heap
	if a.Visibility.Client {
		g.streamText = func(delta string) {
			ev.emit(event.Event{Type: event.Text, Task: t.Task, Agent: agentName, Text: delta, Delta: true})
		}
		g.streamReset = func() { ev.emit(event.Event{Type: event.TextReset, Task: t.Task, Agent: agentName}) }
	}
	items := &ag.items
	*items = attemptItems{g: g, res: res, ev: ev, task: t.Task, agent: agentName, history: a.Visibility.History}
	// History items are kept by item itself: the router is given no parent.
	items.router = *visibility.New(a.Visibility, items, visibility.Tags{Run: t.Run, Task: t.Task, Agent: agentName}, nil)
	if w.skills != nil {
		// Its loads and unloads are the task's events.
		w.skills.mgr.emit = items.taskEvent
	}
	g.item = items.item
	if err := g.add(model.Message{Role: model.User, Text: taskMessage(bt, t.Deps)}); err != nil {
		return nil, a, nil, release, err
	}
	return g, a, resumed, release, nil
}

// attemptItems take an attempt's items where they go: its history items
// and observations to its outcome, the rest to the events as its
// visibility says. One value holds what the closures over them would each
// copy.
type attemptItems struct {
	g           *generator
	res         *work.Outcome
	ev          *emitter
	task, agent string
	history     bool
	router      visibility.Router
}

// item routes one of the generator's items: to the events, to the
// outcome's history items (the task message is the board's, not the
// worker's output) and, a tool result, to its observations.
func (it *attemptItems) item(msg model.Message) {
	it.router.Item(msg)
	if it.history && msg.Role != model.User {
		it.res.Items = append(it.res.Items, msg)
	}
	if msg.Role == model.Tool {
		it.res.Observations = append(it.res.Observations, observe(it.g.tr.Messages(), msg, it.task, it.agent))
	}
}

// Emit stamps an item's event, marked replayed while the generator
// restates journaled work (a resume).
//
// R7: what a resume restates says replayed.
func (it *attemptItems) Emit(e event.Event) {
	e.Replayed = e.Replayed || it.g.replaying
	it.ev.stamped(e)
}

// taskEvent is Emit of an event of the worker's catalog, as the task's.
func (it *attemptItems) taskEvent(e event.Event) {
	e.Task, e.Agent = it.task, it.agent
	it.Emit(e)
}

// worker sets up an attempt's worker from its agent (the default
// worker's when the attempt names none): the tools its agent may call
// (release lets go of the MCP servers they hold), and its prompt with the
// flow observations it was given and its output schema's instructions.
func (d attemptDeps) worker(ctx context.Context, t *work.Attempt) (w *workerEnv, a spec.Agent, typed *typedOutput, release func(), err error) {
	release = func() {}
	a = spec.DefaultAgent()
	if t.Skill != "" {
		if d.skill == nil || d.skill.ID != t.Skill {
			return nil, a, nil, release, fmt.Errorf("worker: skill %q was not loaded", t.Skill)
		}
		ag, ok := d.skill.Agent(t.Agent)
		if !ok {
			return nil, a, nil, release, fmt.Errorf("skill %s has no agent %q", t.Skill, t.Agent)
		}
		a = ag.WithDefaults()
	}
	w = &workerEnv{box: d.box, log: d.gen.log, skill: d.skill, arts: d.gen.arts}
	if len(t.Builtins) > 0 {
		for _, bt := range d.box.builtins(t.Builtins, w.skillDirs) {
			w.offer(bt)
		}
	}
	if t.Skill != "" {
		if release, err = w.allow(ctx, d.skill, a.Tools); err != nil {
			return nil, a, nil, release, err
		}
	}
	switch {
	case len(a.Skills) > 0 && d.skills != nil:
		// The host's catalog and lifecycle, over the agent's skills.
		w.skills = d.skills(a.Skills)
	case len(a.Skills) > 0:
		d.gen.log.Warn().Str("agent", t.Assignee).Msg("the agent's skills: are offered in fsd run's own process only; this worker runs the task without them")
	}
	w.block = strings.TrimSpace(a.Prompt)
	if len(t.Builtins) > 0 && d.skill != nil {
		var b strings.Builder
		writeSkillFolders(&b, []*spec.Skill{d.skill})
		w.block += "\n\n" + strings.TrimSpace(b.String())
	}
	if t.Observations != "" {
		w.block += "\n\n<observations>\n" + t.Observations + "</observations>\n"
	}
	if typed, err = newTypedOutput(a); err != nil {
		return nil, a, nil, release, err
	}
	if typed != nil {
		w.block += typed.prompt()
	}
	return w, a, typed, release, nil
}
