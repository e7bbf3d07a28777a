package work

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/workspace"
)

// Func runs one task attempt to its outcome: engine.Work. A transport's
// worker process is given it rather than importing the engine. A task
// failure is Outcome.Error, never a panic.
type Func func(ctx context.Context, a *Attempt, o Options) *Outcome

// Options are what a worker process brings to an attempt: its model, the
// skill the attempt's agent belongs to (loaded by the worker), its own
// trust decision and where the attempt's events, approvals and journal
// go.
type Options struct {
	Model model.Model
	// Skill is the attempt's skill; nil for the default worker.
	Skill *spec.Skill
	// Trusted says whether the skill's command tools and stdio MCP servers
	// may run; nil trusts all (a worker passes its own --trust).
	Trusted func(*spec.Skill) bool
	// Refusal is what a command tool of an untrusted skill answers ("":
	// the advice to run fsd with --trust).
	Refusal string
	// Secrets are values to mask besides those the attempt finds itself
	// (engine.Options.Secrets): the worker's transport credentials.
	Secrets []string
	// Sink receives the attempt's events, stamped with the attempt's run.
	Sink event.Sink
	// Approver takes the attempt's calls that need approval to the run,
	// which answers them as it answers its own; nil rejects them (never
	// run unapproved) and the model reads why.
	Approver Approver
	Logger   zerolog.Logger
	// Rand is the source of artifact handles; nil is crypto/rand.
	Rand io.Reader
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Log is the attempt log: it takes the attempt's transcript, entry by
	// entry, where the attempt runs (a NATS worker's: a JetStream subject)
	// as a run record's journal.jsonl does in process; nil keeps it in
	// memory only. Steps wait for it as the attempt's Durability says.
	Log journal.Log
	// Logged are the entries earlier deliveries of this attempt put in its
	// log, each a transcript entry's JSON. The attempt resumes after
	// them as a local resume does: journaled model responses and command
	// results are reused, not asked or run again, and an in-doubt call
	// follows journal.Plan. Log must already hold them: they are not
	// written again.
	Logged []json.RawMessage
	// FinalInOutcome: the caller commits the attempt's outcome with every
	// entry of Log the outcome's commit does not carry stored first, so
	// the generator's final answer does not wait for Log: the outcome's
	// commit makes the last step durable. Steps before it and effects
	// wait as Durability says.
	FinalInOutcome bool
	// Workspaces opens the attempt's workspace: a worker keeps its runs'
	// (nil: workspace.Open for each attempt).
	Workspaces *workspace.Cache
}
