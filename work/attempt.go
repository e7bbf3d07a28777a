package work

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/supply"
)

// Dispatcher delivers board task attempts to whoever runs them. Dispatch
// returns when the attempt has an outcome: a result (Outcome.Error set
// when the task failed), or an error when the attempt could not be run at
// all (the transport failed, ctx ended). Events the worker reports go to
// events, already stamped with their run and time; the worker's calls
// that need approval go to approvals, the run's (nil: no one answers
// them).
type Dispatcher interface {
	Dispatch(ctx context.Context, a *Attempt, events event.Sink, approvals Approver) (*Outcome, error)
}

// LogReader is implemented by a Dispatcher whose workers keep an
// attempt log: the transcript of each attempt, where it runs. AttemptLog
// returns one attempt's entries in order, each the JSON object a journal
// line holds after its generator's fields (journal.Head). The engine
// calls it only when it keeps a run record, the record lacks entries the
// outcome counts (Outcome.Logged) and the outcome does not carry them
// inline (Outcome.Log).
type LogReader interface {
	AttemptLog(ctx context.Context, run, task string, attempt int) ([]json.RawMessage, error)
}

// Attempt is everything a worker needs to run one task attempt: the
// board's task, what the run supplies (D5 turns, D7 observations), the
// agent, its limits and the model name. It never carries credentials: a
// worker takes those from its own environment (HandleKey makes handles
// unguessable to a model; it opens nothing).
type Attempt struct {
	// Run and Task are the run's id and the board task's.
	Run  string `json:"run"`
	Task string `json:"task"`
	// Number counts the task's attempts: 1 for the first, more for its
	// retries.
	Number int `json:"attempt"`
	// Goal and Input are the task's, as on the board.
	Goal  string `json:"goal"`
	Input string `json:"input,omitempty"`
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
	// rendered, as of dispatch.
	Observations string `json:"observations,omitempty"`
	// Model is the model string the workflow gives the agent ("": the
	// worker's default).
	Model string `json:"model,omitempty"`
	// Limits are the run's, with the agent's max-steps.
	Limits Limits `json:"limits"`
	// Deadline is when the attempt times out (the agent's timeout, not
	// the run's); zero: none.
	Deadline time.Time `json:"deadline,omitzero"`
	// Durability is the run's: when the worker's steps wait for their
	// journal entries to be stored ("": spec.DurabilityStep).
	Durability spec.Durability `json:"durability,omitempty"`
	// Approve is the workflow's default approval policy (for tools acting
	// outside fsd that set none); ApprovalTimeout is the run's
	// --approval-timeout (0: wait), which a worker applies itself while
	// the run cannot be reached.
	Approve         spec.Approve  `json:"approve,omitempty"`
	ApprovalTimeout time.Duration `json:"approval-timeout,omitempty"`
	// Workspace is the run's workspace folder, absolute: where the
	// worker's programs run and its built-in tools' files are. A worker
	// on another machine uses the same path there (a shared folder).
	Workspace string `json:"workspace,omitempty"`
	// HandleKey is the key the run derives artifact handles with
	// (artifact.NewKeyedStore), derived from its project's handle key, not
	// that key itself: the worker gives the skill it loads the handle the
	// run would, so a provider's prompt cache serves one task's requests
	// from another run's. nil: the run draws its handles, and so does the
	// worker. It travels with what the handles stand for (the skills'
	// files, the task's input): whoever reads the one reads the other.
	HandleKey []byte `json:"handle-key,omitempty"`
	// CacheScope begins the provider cache key of the attempt's requests,
	// which its agent's name ends: the workflow's, so tasks of one agent
	// share a cache bucket across runs. "": a key per run and task.
	CacheScope string `json:"cache-scope,omitempty"`
	// Builtins are the built-in tools (spec.WorkspaceTools) the worker is
	// offered: the workflow's tools: for the default worker, those of
	// them its agent lists for an agent.
	Builtins []string `json:"builtins,omitempty"`
}

// Name is the attempt's generator name, which prefixes its call ids:
// "task:ID", or "task:ID#N" for attempt N > 1. It is the same on every
// delivery and on resume.
func (a *Attempt) Name() string {
	if a.Number > 1 {
		return "task:" + a.Task + "#" + strconv.Itoa(a.Number)
	}
	return "task:" + a.Task
}

// Limits are the limits an attempt's generator runs under.
type Limits struct {
	// MaxSteps bounds the attempt's model calls (D8).
	MaxSteps int `json:"max-steps"`
	// MaxTranscriptMessages is the window's cap (W1).
	MaxTranscriptMessages int `json:"max-transcript-messages"`
	// MaxResultTokens is the size in tokens above which a tool result is
	// kept as an artifact (0: every result goes whole into the window).
	MaxResultTokens int `json:"max-result-tokens,omitempty"`
	// Readers and WindowShed are the workflow's reader surface and how
	// the window sheds ("": compact, half).
	Readers    spec.Readers    `json:"readers,omitempty"`
	WindowShed spec.WindowShed `json:"window-shed,omitempty"`
	// MaxInputTokens and MaxOutputTokens are the attempt's share of the
	// run's and its agent's token budgets: what they had left when it was
	// dispatched (0: no bound). A worker elsewhere reserves each model
	// call in them, as the run does in its own.
	MaxInputTokens  int `json:"max-input-tokens,omitempty"`
	MaxOutputTokens int `json:"max-output-tokens,omitempty"`
}

// RanBy is the worker process that ran the attempt; nil in process.
func (o *Outcome) RanBy() *event.Worker {
	if o.Worker == "" {
		return nil
	}
	return &event.Worker{Name: o.Worker, Host: o.Host, PID: o.PID}
}

// Outcome is what one task attempt came to.
type Outcome struct {
	// Result is the task's answer (its typed output's JSON when its agent
	// has an output schema).
	Result string `json:"result,omitempty"`
	// Error is the task's error; "" when it completed.
	Error string `json:"error,omitempty"`
	// Items are the worker's messages for the parent's history, when its
	// agent's visibility has history (D6).
	Items []model.Message `json:"items,omitempty"`
	// Observations are the attempt's tool calls in the order it made
	// them, for the run's ledger (D7). They enter the ledger when the
	// outcome comes back, completed or failed, whatever the transport.
	Observations []supply.Observation `json:"observations,omitempty"`
	// Usage is what the attempt's model calls used, all together.
	Usage model.Usage `json:"usage"`
	// Booked says Usage is already in the run's account: the attempt ran
	// with it (in process), and its budgets were checked at every step.
	// Never sent: a worker elsewhere books nothing of the run's.
	Booked bool `json:"-"`
	// Worker names the worker that ran it, Host its host and PID its
	// process ("" and 0 in process).
	Worker string `json:"worker,omitempty"`
	Host   string `json:"host,omitempty"`
	PID    int    `json:"pid,omitempty"`
	// Model is the model string the attempt ran with (Attempt.Model as
	// the worker received it, after the run's --model): Usage is priced
	// by it, as an in-process call is by the model that answered.
	Model string `json:"model,omitempty"`
	// Logged is how many transcript entries the attempt log holds where
	// the attempt ran (0: none, or journaled in the run record itself):
	// the run copies those its record lacks into it.
	Logged int `json:"journaled,omitempty"`
	// Log is the attempt's transcript when the outcome carries it inline
	// (a small one), each entry the JSON object a journal line holds after
	// its generator's fields; else the run reads it from the dispatcher
	// (LogReader).
	Log []json.RawMessage `json:"journal,omitempty"`
	// Replayed says the attempt's end came from its journal (a resume
	// restated it), so its task's end event says replayed. Never sent: a
	// remote attempt's is judged from Logged.
	Replayed bool `json:"-"`
}
