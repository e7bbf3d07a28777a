package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/supply"
	"github.com/fsdrun/fsd/transcript"
	"github.com/fsdrun/fsd/work"
)

// runTask is the board's runner for every task, however it is run: it
// makes the task's attempt (what its worker is supplied as of now: D5
// turns, D7 observations), hands it to the run's dispatcher — a
// transport's (fsd run --nats) or the in-process one — and folds the
// outcome into the run: usage, observations, history items, the typed
// output, and a transcript journaled elsewhere.
func (hb *hostBoard) runTask(ctx context.Context, t *board.Task, deps []board.DepResult) (string, error) {
	skill, agent, ok := hb.resolve(t.Assignee)
	if !ok {
		return "", fmt.Errorf("assignee %q is not an agent of any skill found", t.Assignee)
	}
	if err := hb.renderStatic(t, deps); err != nil {
		return "", err
	}
	a := spec.DefaultAgent()
	if agent != nil {
		a = agent.WithDefaults()
	}
	// N22: token budgets are checked at dispatch, and by an in-process
	// attempt before each of its model calls: a worker elsewhere cannot
	// see what the others use.
	caller := model.Caller{Agent: t.Agent(), TaskID: t.ID}
	if err := hb.workers.gen.acct.check(caller); err != nil {
		return "", err
	}
	at := hb.attempt(t, deps, skill, agent, a)
	// B5: a worker elsewhere holds its calls to what was left.
	at.Limits.MaxInputTokens, at.Limits.MaxOutputTokens = hb.workers.gen.acct.left(caller)
	var approver work.Approver
	if appr := hb.workers.gen.appr; appr != nil {
		at.Approve, at.ApprovalTimeout = appr.Default(), appr.Timeout()
		// An attempt run here asks the run's gate itself: only a worker
		// elsewhere needs the gate's remote side.
		if _, here := hb.dispatch.(*inProcess); !here {
			// The attempt's calls wait for approval under its own ctx:
			// they end with it.
			actx, cancel := context.WithCancel(ctx)
			defer cancel()
			approver = appr.Remote(actx, t.ID, t.Agent(), at.Number)
		}
	}
	res, err := hb.dispatch.Dispatch(ctx, at, hb.ev, approver)
	if err != nil {
		hb.ran(t.ID, event.Attempt{N: at.Number, Err: err.Error()})
		return "", err
	}
	return hb.fold(ctx, t, at, a, caller, res)
}

// attempt makes a task's attempt: what its worker is supplied as of now
// (D5 turns, D7 observations), its agent, limits and model.
func (hb *hostBoard) attempt(t *board.Task, deps []board.DepResult, skill *spec.Skill, agent *spec.Agent, a spec.Agent) *work.Attempt {
	wd := hb.workers
	at := &work.Attempt{
		Run: hb.ev.runID, Task: t.ID, Number: max(t.Attempts, 1), Goal: t.Goal, Input: t.Input, Deps: deps,
		Assignee: t.Assignee, Model: hb.cat.modelFor(agent, false), Durability: wd.gen.durability,
		Limits: work.Limits{MaxSteps: wd.limits.MaxSteps, MaxTranscriptMessages: wd.limits.MaxTranscriptMessages,
			MaxResultTokens: wd.limits.MaxResultTokens, Readers: wd.gen.readers, WindowShed: wd.gen.shed},
	}
	if a.MaxSteps > 0 {
		at.Limits.MaxSteps = a.MaxSteps
	}
	at.Workspace = wd.box.workDir()
	at.HandleKey, at.CacheScope = wd.gen.arts.Key(), wd.gen.cacheScope
	at.Builtins = offeredBuiltins(wd.builtins, agent)
	if skill != nil {
		at.Skill, at.Agent = skill.ID, agent.Name
	}
	if obs := hb.observations(t, a); len(obs) > 0 {
		at.Observations = supply.RenderObservations(obs)
	}
	if a.ContextSupply == spec.SupplyConversation {
		at.Turns = supply.Conversation(hb.parent(), a.Turns)
		if hb.host != nil {
			// H4 and C4 hold for what a worker inherits too: reader
			// results of skills the host has unloaded arrive as stubs, and
			// quotes of skills disabled or changed since without the quote.
			// (The host is blocked in runBoard, so its loaded set is stable
			// here.)
			at.Turns = reclaim(at.Turns, hb.host, readersOf(hb.host.readers))
		}
	}
	// The agent's timeout goes with the task; the run's own deadline
	// (--timeout) does not: a run that stops leaves tasks running on
	// workers elsewhere for a resume to pick up, as when it is
	// interrupted.
	if a.Timeout > 0 {
		at.Deadline = time.Now().Add(a.Timeout)
	}
	return at
}

// fold takes an attempt's outcome into the run, the same for every
// transport: its transcript (when journaled elsewhere), usage,
// observations, history items and typed output; its error fails the
// task.
func (hb *hostBoard) fold(ctx context.Context, t *board.Task, at *work.Attempt, a spec.Agent, caller model.Caller, res *work.Outcome) (string, error) {
	wd := hb.workers
	hb.ran(t.ID, event.Attempt{N: at.Number, Worker: res.RanBy(), Err: res.Error})
	hb.recordRemote(ctx, at, res)
	if res.Replayed {
		hb.restated(t.ID) // its end is the journal's: task.completed restates it
	}
	if !res.Booked { // N22: a worker's usage, booked here once
		wd.gen.acct.add(caller, cmp.Or(res.Model, at.Model), res.Usage)
	}
	// An attempt's observations become visible to the tasks dispatched
	// after its outcome, on every transport (D7).
	for _, o := range res.Observations {
		wd.ledger.Record(o)
	}
	if a.Visibility.History {
		keep := hb.keepHistory(t.ID)
		for _, m := range res.Items {
			keep(m)
		}
	}
	if res.Error != "" {
		return "", errors.New(res.Error)
	}
	// Flow policy `all` shows completed tasks' observations only: once
	// the answer is durable when the board waits for it (board.Then).
	ledger, id := wd.ledger, t.ID
	board.Then(ctx, func() { ledger.Done(id) })
	if a.Output != nil {
		t.Output = json.RawMessage(res.Result)
	}
	return res.Result, nil
}

// observations selects the flow observations a task's worker sees (D7).
func (hb *hostBoard) observations(t *board.Task, a spec.Agent) []supply.Observation {
	var ancestors []string
	if a.Flow.Policy == spec.FlowAncestors {
		ancestors = hb.b.Ancestors(t.ID)
	}
	return hb.workers.ledger.Select(a.Flow, t.ID, t.Deps, ancestors, sharedTokens.count)
}

// inProcess is the run's own dispatcher, used when it has no other: it
// runs each attempt in this process with runAttempt, as a worker process
// does with Work, but with the run's model, toolbox and MCP servers,
// artifacts, approvals (the approver Dispatch is given is not needed)
// and record, and an account that books every call into the run's as it
// happens.
type inProcess struct {
	workers workerDeps
	ev      *emitter
	// resolve finds the skill and agent of the attempt's assignee.
	resolve func(assignee string) (*spec.Skill, *spec.Agent, bool)
}

// N1: the in-process dispatcher runs the same runAttempt as a worker.
func (p *inProcess) Dispatch(ctx context.Context, a *work.Attempt, _ event.Sink, _ work.Approver) (*work.Outcome, error) {
	skill, _, _ := p.resolve(a.Assignee)
	gen := p.workers.gen
	gen.acct = gen.acct.attempt()
	res := runAttempt(ctx, a, attemptDeps{gen: gen, ev: p.ev, model: p.workers.model, skill: skill, box: p.workers.box, skills: p.workers.skills,
		open: func() (*transcript.Transcript, *genReplay, error) {
			return p.workers.transcript(a.Task, max(a.Number, 1))
		}})
	res.Booked = true
	return res, nil
}
