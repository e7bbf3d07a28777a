package engine

// The seam to workers in other processes (issue 17): a board whose run has
// a Dispatcher hands each task attempt to it instead of running a worker
// generator here, and Work is what a worker process runs for one such
// task. The transport (NATS JetStream) is package natsboard's.

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
	"github.com/fsdrun/fsd/tokens"
)

// Dispatcher runs board task attempts outside this process. Dispatch
// returns when the attempt has an outcome: a result (RemoteResult.Error
// set when the task failed), or an error when the attempt could not be
// run at all (the transport failed, ctx ended). Events the worker reports
// go to events, already stamped with their run and time; the worker's
// calls that need approval go to approvals, the run's (nil: no one
// answers them).
type Dispatcher interface {
	Dispatch(ctx context.Context, t *RemoteTask, events event.Sink, approvals Approver) (*RemoteResult, error)
}

// RemoteTask is everything a worker needs to run one task attempt: the
// board's task, what the coordinator supplies (D5 turns, D7 observations),
// the agent, its limits and the model name. It never carries credentials:
// a worker takes those from its own environment.
type RemoteTask struct {
	Run     string `json:"run"`
	Task    string `json:"task"`
	Attempt int    `json:"attempt"`
	Goal    string `json:"goal"`
	Input   string `json:"input,omitempty"`
	// Deps are the results of the task's dependencies (D3).
	Deps []board.DepResult `json:"deps,omitempty"`
	// Skill and Agent name the agent (Agent's name inside skill Skill);
	// both are "" for the default worker. Assignee is the task's assignee
	// as on the board, which names it in events.
	Skill    string `json:"skill,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Assignee string `json:"assignee,omitempty"`
	// Turns are the parent's whole turns a conversation-supply agent
	// inherits (D5), as of dispatch.
	Turns []model.Message `json:"turns,omitempty"`
	// Observations are the flow observations the worker sees (D7),
	// rendered.
	Observations string `json:"observations,omitempty"`
	// Model is the model string the workflow gives the agent ("": the
	// worker's default).
	Model  string       `json:"model,omitempty"`
	Limits RemoteLimits `json:"limits"`
	// Deadline is when the attempt times out (the agent's timeout, not
	// the run's); zero: none.
	Deadline time.Time `json:"deadline,omitzero"`
	// Durability is the run's: when the worker's steps wait for their
	// journal entries to be stored ("": spec.DurabilityStep).
	Durability spec.Durability `json:"durability,omitempty"`
	// Approve is the workflow's default approval policy (for tools acting
	// outside fsd that set none); ApprovalTimeout is the run's
	// --approval-timeout (0: wait), which a worker applies itself while
	// the coordinator cannot be reached.
	Approve         spec.Approve  `json:"approve,omitempty"`
	ApprovalTimeout time.Duration `json:"approval-timeout,omitempty"`
}

// RemoteLimits are the limits a worker's generator runs under.
type RemoteLimits struct {
	MaxSteps              int `json:"max-steps"`
	MaxTranscriptMessages int `json:"max-transcript-messages"`
	MaxResultTokens       int `json:"max-result-tokens,omitempty"`
}

// RemoteResult is the outcome of one task attempt on a worker.
type RemoteResult struct {
	Result string `json:"result,omitempty"`
	// Error is the task's error; "" when it completed.
	Error string `json:"error,omitempty"`
	// Items are the worker's messages for the parent's history, when its
	// agent's visibility has history (D6).
	Items []model.Message `json:"items,omitempty"`
	// Observations are the worker's tool calls, for the run's ledger (D7).
	Observations []supply.Observation `json:"observations,omitempty"`
	Usage        model.Usage          `json:"usage"`
	// Worker names the worker that ran it.
	Worker string `json:"worker,omitempty"`
	// Model is the model string the attempt ran with (RemoteTask.Model as
	// the worker received it, after the coordinator's --model): Usage is
	// priced by it, as an in-process call is by the model that answered.
	Model string `json:"model,omitempty"`
	// Journaled is how many transcript entries the attempt's journal
	// holds (0: none, or a worker that does not say): the coordinator
	// copies those its record lacks into it.
	Journaled int `json:"journaled,omitempty"`
	// Journal is the attempt's transcript when the outcome carries it
	// inline (a small one), each entry the JSON object a journal line
	// holds after its generator's fields; else the coordinator reads it
	// from the dispatcher (RemoteJournal).
	Journal []json.RawMessage `json:"journal,omitempty"`
}

// runner is what runs the board's tasks: the run's dispatcher when it
// has one (fsd run --nats), else a worker generator in this process.
func (hb *hostBoard) runner() board.Runner {
	if hb.dispatch != nil {
		return hb.runRemote
	}
	return hb.runTask
}

// runRemote hands one task attempt to the run's dispatcher and folds what
// comes back into the run: tokens, observations, history items.
func (hb *hostBoard) runRemote(ctx context.Context, t *board.Task, deps []board.DepResult) (string, error) {
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
	wd := hb.workers
	// Token budgets are checked at dispatch: a worker cannot see what the
	// others use.
	caller := model.Caller{Agent: t.Agent(), TaskID: t.ID}
	if err := wd.gen.acct.check(caller); err != nil {
		return "", err
	}
	rt := &RemoteTask{
		Run: hb.ev.runID, Task: t.ID, Attempt: max(t.Attempts, 1), Goal: t.Goal, Input: t.Input, Deps: deps,
		Assignee: t.Assignee, Model: hb.cat.modelFor(agent, false), Durability: wd.gen.durability,
		Limits: RemoteLimits{MaxSteps: wd.limits.MaxSteps, MaxTranscriptMessages: wd.limits.MaxTranscriptMessages,
			MaxResultTokens: wd.limits.MaxResultTokens},
	}
	if a.MaxSteps > 0 {
		rt.Limits.MaxSteps = a.MaxSteps
	}
	if skill != nil {
		rt.Skill, rt.Agent = skill.ID, agent.Name
	}
	if obs := hb.observations(t, a); len(obs) > 0 {
		rt.Observations = supply.RenderObservations(obs)
	}
	if a.ContextSupply == spec.SupplyConversation {
		rt.Turns = supply.Conversation(hb.parent(), a.Turns)
		if hb.host != nil {
			rt.Turns = reclaim(rt.Turns, hb.host.mgr.isLoaded)
		}
	}
	// The agent's timeout goes with the task; the run's own deadline
	// (--timeout) does not: a coordinator that stops leaves tasks running
	// on workers for a resume to pick up, as when it is interrupted.
	if a.Timeout > 0 {
		rt.Deadline = time.Now().Add(a.Timeout)
	}
	var approver Approver
	if appr := wd.gen.appr; appr != nil {
		rt.Approve, rt.ApprovalTimeout = appr.def, appr.timeout
		// The attempt's calls wait for approval under its own ctx: they
		// end with it.
		actx, cancel := context.WithCancel(ctx)
		defer cancel()
		approver = appr.remoteApprover(actx, t, rt.Attempt)
	}
	res, err := hb.dispatch.Dispatch(ctx, rt, event.SinkFunc(hb.ev.stamped), approver)
	if err != nil {
		return "", err
	}
	hb.recordRemote(ctx, rt, res)
	wd.gen.acct.add(caller, cmp.Or(res.Model, rt.Model), res.Usage)
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
	wd.ledger.Done(t.ID)
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
	return hb.workers.ledger.Select(a.Flow, t.ID, t.Deps, ancestors, tokens.Count)
}
