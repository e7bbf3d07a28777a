package engine

// The host's generator: built from the run (newHost), run on the input as
// a conversation, or asked for its first request (FirstRequest).

import (
	"context"
	"fmt"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/transcript"
	"github.com/fsdrun/fsd/visibility"
	"github.com/fsdrun/fsd/work"
)

// newHost builds the host generator and its world.
func (r *Run) newHost(input string) (*generator, *hostEnv, error) {
	tr, journal, err := r.newTranscript("", 1)
	if err != nil {
		return nil, nil, err
	}
	h := &hostEnv{log: r.log, tr: tr, mgr: newManager(r.managerDeps()), readers: r.wf.Readers}
	if r.wf.Host != nil {
		h.prompt = r.wf.Host.Prompt
	}
	h.builtins = r.box.builtins(r.wf.Tools, h.mgr.skillDirs)
	h.board = r.newHostBoard(h)
	g := &generator{
		genDeps: r.genDeps(), caller: model.Caller{Input: input, Model: r.cat.modelFor(nil, true)}, model: r.opts.Model, tr: tr, journal: journal,
		maxMessages: r.limits.MaxTranscriptMessages, maxSteps: r.limits.MaxSteps, env: h, name: spec.HostName, recName: transcriptName("", 1),
		// The host's items are client-visible: stream its text as it comes.
		streamText: func(delta string) {
			r.ev.emit(event.Event{Type: event.Text, Text: r.box.secrets.String(delta), Delta: true})
		},
		streamReset: func() { r.ev.emit(event.Event{Type: event.TextReset}) },
	}
	g.item = func(m model.Message) {
		for _, e := range visibility.Events(m, event.Event{}) {
			e.Replayed = g.replaying
			r.ev.emit(e)
		}
	}
	h.gen = g
	h.mgr.restating = h.replaying
	return g, h, nil
}

// managerDeps are what a skill manager takes from the run: the host's,
// and a worker's whose agent lists skills:.
func (r *Run) managerDeps() managerDeps {
	return managerDeps{cat: r.cat, arts: r.arts, box: r.box, emit: r.ev.emit, channel: r.wf.Channel, preview: r.wf.Preview, max: r.limits.MaxLoadedSkills}
}

// skillsEnv is the world of a worker whose agent lists skills: the
// host's, with no prompt and no board, over a manager that offers only
// those skills.
func (r *Run) skillsEnv(only []string) *hostEnv {
	md := r.managerDeps()
	md.only = only
	return &hostEnv{log: r.log, mgr: newManager(md), readers: r.wf.Readers}
}

// conversation runs the host generator on input until its final answer.
func (r *Run) conversation(ctx context.Context, input string) (string, error) {
	g, h, err := r.newHost(input)
	if err != nil {
		return "", err
	}
	if err := h.board.seed(); err != nil {
		return "", err
	}
	if r.opts.session != nil {
		return r.sessionTurn(ctx, g, h, input)
	}
	for i, m := range r.opts.History {
		if err := g.tr.AppendMessage(m); err != nil {
			return "", fmt.Errorf("history message %d: %w", i+1, err)
		}
	}
	if err := g.add(model.Message{Role: model.User, Text: input}); err != nil {
		return "", err
	}
	g.replay = newCursor(g.journal, len(g.tr.Messages()))
	return g.loop(ctx)
}

// genDeps are what the run hands each of its generators.
func (r *Run) genDeps() genDeps {
	return genDeps{runID: r.ID, emit: r.ev.emit, acct: r.acct, tokens: r.tokens, log: r.log, rec: r.rec, now: r.now,
		arts: r.arts, maxResult: r.limits.MaxResultTokens, noCache: r.wf.NoCache, cacheScope: r.cacheScope(), obs: r.opts.Observer,
		durability: r.opts.Durability, appr: r.appr, secrets: r.box.secrets, readers: r.wf.Readers, shed: r.wf.WindowShed}
}

// cacheScope is what the cache keys of the run's generators begin with:
// the workflow's name, unless cache: per-run.
func (r *Run) cacheScope() string {
	if r.wf.CachePerRun {
		return ""
	}
	return "fsd/" + r.wf.Name
}

// FirstRequest assembles the host's first request without calling the
// model: what `fsd context` prints.
func (r *Run) FirstRequest(input string) (*model.Request, error) {
	if input == "" {
		input = r.wf.Input
	}
	g, h, err := r.newHost(input)
	if err != nil {
		return nil, err
	}
	if err := h.board.seed(); err != nil {
		return nil, err
	}
	if err := g.add(model.Message{Role: model.User, Text: input}); err != nil {
		return nil, err
	}
	return g.request(0), nil
}

// WorkerRequest assembles the first request a worker of agent
// (skill/agent; "" is the default worker) makes, without calling the
// model: what `fsd context --agent` prints. Its task is the workflow's
// first static task assigned to agent — its goal and input rendered
// against the run's input (input; "" is the workflow's), a dependency's
// result a placeholder — or, when there is none, a placeholder goal.
func (r *Run) WorkerRequest(agent, input string) (*model.Request, error) {
	if input == "" {
		input = r.wf.Input
	}
	hb := r.newHostBoard(nil)
	parent := []model.Message{{Role: model.User, Text: input}}
	hb.parent = func() []model.Message { return parent }
	skill, ag, ok := hb.resolve(agent)
	if !ok || (agent != "" && ag == nil) {
		return nil, fmt.Errorf("%q is not an agent of any skill found; name it as skill/agent", agent)
	}
	a := spec.DefaultAgent()
	if ag != nil {
		a = ag.WithDefaults()
	}
	t := &board.Task{ID: "t1", Assignee: agent}
	var deps []board.DepResult
	for _, st := range r.wf.Tasks {
		if st.Assignee != agent {
			continue
		}
		t.ID, t.Goal, t.Input = st.ID, st.Goal, st.Input
		for _, d := range st.Deps {
			dep := board.Task{}
			for _, o := range r.wf.Tasks {
				if o.ID == d {
					dep.Assignee = o.Assignee
				}
			}
			deps = append(deps, board.DepResult{TaskID: d, Agent: dep.Agent(), Result: "(the result of task " + d + ")"})
		}
		if len(deps) == 0 {
			// With deps the templates stay as written: their results are not known.
			if g, err := renderTaskText("goal", t.Goal, input, nil); err == nil {
				t.Goal = g
			}
			if in, err := renderTaskText("input", t.Input, input, nil); err == nil {
				t.Input = in
			}
		}
		break
	}
	if t.Goal == "" {
		t.Goal = "(the task's goal)"
	}
	at := hb.attempt(t, deps, skill, ag, a)
	d := attemptDeps{gen: r.genDeps(), ev: &r.ev, model: r.opts.Model, skill: skill, box: r.box, skills: r.skillsEnv,
		open: func() (*transcript.Transcript, *genReplay, error) { return r.newTranscript(t.ID, 1) }}
	g, _, _, release, err := d.prepare(context.Background(), at, &work.Outcome{})
	defer release()
	if err != nil {
		return nil, err
	}
	return g.request(0), nil
}
