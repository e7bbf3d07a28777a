package engine

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/artifact"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/mcptool"
	"github.com/fsdrun/fsd/transcript"
	"github.com/fsdrun/fsd/work"
)

// Work runs one task attempt in a worker process (a work.Func): the same
// runAttempt the run's in-process dispatcher calls, with the worker's own
// model, toolbox, MCP servers, artifacts and account, its events to
// o.Sink, its calls that need approval to o.Approver and its transcript
// journaled to o.Log; resumed after o.Logged when an earlier
// delivery journaled steps. A task failure is Outcome.Error, never a
// panic.
//
// N1, N10: a worker's attempt runs the one task path, resumed from its
// attempt log.
func Work(ctx context.Context, t *work.Attempt, o work.Options) *work.Outcome {
	return observedWork(ctx, t, o, nil)
}

// Observed is Work with obs watching the attempt's generator, model and
// tool calls, as Options.Observer does a run's: a worker process that
// traces its attempts runs them with it. Their spans join the trace ctx
// carries (the coordinator's, from the task message).
func Observed(obs Observer) work.Func {
	return func(ctx context.Context, t *work.Attempt, o work.Options) *work.Outcome {
		return observedWork(ctx, t, o, obs)
	}
}

func observedWork(ctx context.Context, t *work.Attempt, o work.Options, obs Observer) *work.Outcome {
	if o.Model == nil {
		return &work.Outcome{Model: t.Model, Error: "worker: no model"}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	resumed, err := rawGenReplay(o.Logged)
	if err != nil {
		return &work.Outcome{Model: t.Model, Error: fmt.Sprintf("worker: the task's journal: %v", err)}
	}
	ev := &emitter{runID: t.Run, now: o.Now, sink: o.Sink}
	arts := artifact.NewStore(o.Rand)
	if t.HandleKey != nil {
		if arts, err = artifact.NewKeyedStore(t.HandleKey); err != nil {
			return &work.Outcome{Model: t.Model, Error: fmt.Sprintf("worker: %v", err)}
		}
	}
	box := newToolbox(o.Trusted, runSecrets(o.Secrets))
	box.refusal = o.Refusal
	box.wrap = refusedOnce(nil, o.Logger)
	if t.Workspace != "" {
		ws, err := o.Workspaces.Open(t.Workspace)
		if err != nil {
			return &work.Outcome{Model: t.Model, Error: fmt.Sprintf("worker: %v", err)}
		}
		box.ws = ws
	}
	// No workflow here: the skill's and its programs' own sandbox
	// settings apply, on top of the default sandbox.
	box.mcp = box.newMCP(mcptool.Options{Trusted: o.Trusted, Idle: -1, Spool: workSpool{arts}, Logger: o.Logger, Mask: box.secrets.String,
		Workspace: box.workDir})
	defer box.mcp.Close()
	acct := &account{maxIn: t.Limits.MaxInputTokens, maxOut: t.Limits.MaxOutputTokens, key: shareKey,
		tasks: map[string]*tally{}, agents: map[string]*tally{}}
	return runAttempt(ctx, t, attemptDeps{
		gen: genDeps{runID: t.Run, cacheScope: t.CacheScope, emit: ev.emit, acct: acct, tokens: sharedTokens, log: o.Logger, now: o.Now,
			arts: arts, appr: approval.ForWorker(t, o, ev.emit), secrets: box.secrets, obs: obs, finalByCaller: o.FinalInOutcome},
		ev: ev, model: o.Model, skill: o.Skill, box: box,
		open: func() (*transcript.Transcript, *genReplay, error) {
			return journaledTranscript(o.Log, journal.Gen{Task: t.Task, Attempt: max(t.Number, 1)}, resumed, o.Now), resumed, nil
		},
	})
}
