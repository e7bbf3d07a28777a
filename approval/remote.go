package approval

// Approvals of calls made on remote workers (fsd run --nats): the worker's
// gate asks, the coordinator's gate answers — the same prompt, fsd
// approve, --approve and --approval-timeout, approvals.jsonl, run.json
// and events as for a call made in the coordinator's process. The
// transport is the Dispatcher's (package natsboard: request/reply on a
// subject of the task attempt).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/work"
)

const (
	// remoteHold is how long a worker lets the coordinator hold one
	// request (a long poll); the first request of a call holds
	// remoteFirstHold, so a call answered at once (auto, a first tool
	// approved before, an answer on record) never parks its task.
	remoteHold      = 10 * time.Second
	remoteFirstHold = time.Second
	// remoteRetry is the pause before asking again a coordinator that
	// did not answer (down, restarting).
	remoteRetry = time.Second
)

// ForWorker returns the gate of an attempt run on a worker (by
// engine.Work): it asks the run over o.Approver, with the attempt's
// workflow default and approval timeout; without an Approver, a call
// that needs approval is rejected — never run unapproved — and the model
// reads why. emit sends its events (the run reports the approvals it
// answers, so a gate that asks sends none).
//
// A10, A12: a worker's gate asks the coordinator and never runs a call
// unanswered.
func ForWorker(t *work.Attempt, o work.Options, emit func(event.Event)) *Gate {
	g := New(Config{Mode: Deny, Timeout: t.ApprovalTimeout, Default: t.Approve, Now: o.Now, Emit: emit, Log: o.Logger})
	if o.Approver == nil {
		g.denyReason = "this call needs a person's approval, and this worker has no coordinator to ask; run the task with fsd run --nats, or set approve: never on the tool"
		return g
	}
	g.ask = o.Approver
	g.emit = func(event.Event) {} // the coordinator reports the approvals it answers
	return g
}

// askRemote is decide on a worker: the coordinator answers. While no
// answer has come the task gives its worker slot back (its message keeps
// its heartbeats). A coordinator that cannot be reached is asked again
// until the approval timeout, then the call is rejected.
//
// A6, A12: the worker slot is given back while waiting; an unreachable
// coordinator is asked again until the approval timeout rejects the call.
func (g *Gate) askRemote(ctx context.Context, p runrecord.PendingCall, policy spec.Approve, grant runrecord.Grant) (ans runrecord.Answer, needed, fresh bool, err error) {
	g.mu.Lock()
	approvedOnce := g.first[p.Tool]
	g.mu.Unlock()
	if policy == spec.ApproveNever || (policy == spec.ApproveFirst && approvedOnce) {
		return runrecord.Answer{}, false, false, nil
	}
	q := work.ApprovalRequest{PendingCall: p, Policy: policy, Hold: remoteFirstHold}
	if grant.Skill != "" {
		// The coordinator records the grant, or under --approve deny
		// rejects the call.
		q.Grant = &grant
	}
	var (
		unpark      func() error
		unreachable time.Time // since when no coordinator answered
		lastErr     error
	)
	defer func() {
		if unpark != nil {
			if uerr := unpark(); err == nil && uerr != nil {
				err = uerr
			}
		}
	}()
	for {
		rep, rerr := g.ask.Approve(ctx, q)
		if ctx.Err() != nil {
			return runrecord.Answer{}, false, false, context.Cause(ctx)
		}
		if rerr == nil && q.Taking {
			// The coordinator counted the call as taken: fresh only if no
			// worker took it before.
			return ans, true, rep.Status == work.ApprovalAnswered && rep.Fresh, nil
		}
		if rerr == nil && rep.Status != work.ApprovalPending {
			ans, needed, fresh, err = g.settle(p, rep, q.Grant != nil)
			if err != nil || !needed || !fresh || ans.Decision == runrecord.Rejected {
				return ans, needed, fresh, err
			}
			// A fresh answer that runs the call: take it first, so the
			// coordinator knows the call may run from now on (a reply that
			// reached no worker leaves it fresh for the next delivery).
			q.Taking, q.Hold = true, 0
			continue
		}
		if unpark == nil {
			// A task waiting for a person is not work: its slot goes to
			// others.
			g.log.Info().Str("call", p.Call).Str("tool", p.Tool).Msg("waiting for approval from the coordinator")
			unpark = board.Park(ctx)
		}
		if !q.Taking {
			q.Hold = remoteHold
		}
		if rerr == nil {
			unreachable, lastErr = time.Time{}, nil
			continue // the coordinator held the request: ask again at once
		}
		if unreachable.IsZero() {
			unreachable = g.now()
			g.log.Warn().Err(rerr).Str("call", p.Call).Msg("the coordinator does not answer; asking again until it does")
		}
		lastErr = rerr
		wait := remoteRetry
		if g.timeout > 0 {
			left := g.timeout - g.now().Sub(unreachable)
			if left <= 0 {
				return runrecord.Answer{Call: p.Call, Decision: runrecord.Rejected, By: "timeout", Time: g.now(),
					Reason: fmt.Sprintf("no answer within %s: the run's coordinator (fsd run --nats) could not be reached (%v)", g.timeout, lastErr)}, true, true, nil
			}
			wait = min(wait, left)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return runrecord.Answer{}, false, false, context.Cause(ctx)
		case <-t.C:
		}
	}
}

// settle checks the coordinator's reply: anything but a well-formed
// answer to this call rejects it. A free reply to a granted call does not
// count as an approval for approve: first (the grant may be why).
func (g *Gate) settle(p runrecord.PendingCall, rep work.ApprovalReply, granted bool) (runrecord.Answer, bool, bool, error) {
	reject := func(reason string) (runrecord.Answer, bool, bool, error) {
		return runrecord.Answer{Call: p.Call, Decision: runrecord.Rejected, By: "coordinator", Time: g.now(), Reason: reason}, true, false, nil
	}
	switch rep.Status {
	case work.ApprovalFree:
		if !granted {
			g.mu.Lock()
			g.first[p.Tool] = true
			g.mu.Unlock()
		}
		return runrecord.Answer{}, false, false, nil
	case work.ApprovalRefused:
		return reject("the run's coordinator refused the request: " + rep.Reason)
	case work.ApprovalAnswered:
	default:
		return reject(fmt.Sprintf("the run's coordinator replied %q, which this worker does not know", rep.Status))
	}
	ans := rep.Answer
	switch {
	case ans == nil || ans.Call != p.Call:
		return reject("the run's coordinator answered another call")
	case ans.Decision == runrecord.Edited && !json.Valid(ans.Args):
		return reject("the approver's edited arguments are not JSON")
	case ans.Decision != runrecord.Approved && ans.Decision != runrecord.Edited && ans.Decision != runrecord.Rejected:
		return reject(fmt.Sprintf("the approver's decision %q is not approved, edited or rejected", ans.Decision))
	}
	if ans.Decision != runrecord.Rejected {
		g.mu.Lock()
		g.first[p.Tool] = true
		g.mu.Unlock()
	}
	return *ans, true, rep.Fresh, nil
}

// remoteApprover answers the approval requests of one remote task
// attempt on the coordinator. Each call is decided once, in the
// background of the attempt's ctx (the board task: its slot is parked
// while the call waits, and the wait ends with the task), however often
// and from however many workers it is asked.
type remoteApprover struct {
	g      *Gate
	ctx    context.Context
	prefix string // the attempt's call ids start with it
	task   string
	agent  string

	mu    sync.Mutex
	calls map[string]*remoteCall
}

type remoteCall struct {
	done  chan struct{}
	reply work.ApprovalReply
	taken bool // a worker took the answer (work.ApprovalRequest.Taking): the call may have run
}

// Remote returns the approver of one attempt of a task (its id and
// agent), run by the dispatch whose ctx is ctx: the run's side of a
// worker's gate. Its calls wait under ctx and end with it.
//
// A10: the run's gate decides a worker's call as a local one.
func (g *Gate) Remote(ctx context.Context, task, agent string, attempt int) work.Approver {
	// The attempt's generator name, which prefixes its call ids.
	name := (&work.Attempt{Task: task, Number: attempt}).Name()
	// calls is made by the first call that asks: most attempts ask none.
	return &remoteApprover{g: g, ctx: ctx, prefix: name + "/", task: task, agent: agent}
}

// Approve implements work.Approver on the coordinator. It never fails: a
// request it cannot take is work.ApprovalRefused, a wait that ctx (the hold)
// or the attempt ended is work.ApprovalPending.
func (r *remoteApprover) Approve(ctx context.Context, q work.ApprovalRequest) (work.ApprovalReply, error) {
	if !strings.HasPrefix(q.Call, r.prefix) || len(q.Call) == len(r.prefix) {
		return work.ApprovalReply{Status: work.ApprovalRefused, Reason: fmt.Sprintf("call %q is not a call of task %s (want %s…)", q.Call, r.task, r.prefix)}, nil
	}
	if q.Policy != spec.ApproveFirst {
		q.Policy = spec.ApproveAlways // whatever else a worker says, ask
	}
	// The coordinator names the task and agent, not the worker.
	p := q.PendingCall
	p.Task, p.Agent, p.Since = r.task, r.agent, time.Time{}
	if q.Taking {
		return r.take(p.Call), nil
	}
	r.mu.Lock()
	c, ok := r.calls[p.Call]
	if !ok {
		c = &remoteCall{done: make(chan struct{})}
		if r.calls == nil {
			r.calls = map[string]*remoteCall{}
		}
		r.calls[p.Call] = c
		go r.decide(c, p, q.Policy, q.Grant)
	}
	r.mu.Unlock()
	select {
	case <-c.done:
	case <-ctx.Done():
		return work.ApprovalReply{Status: work.ApprovalPending}, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := c.reply
	if rep.Status == work.ApprovalPending {
		delete(r.calls, p.Call) // the attempt's ctx ended the wait: a later ask waits anew
	}
	// Provisional: only a worker that takes it (r.take) may run the call.
	rep.Fresh = rep.Fresh && !c.taken
	return rep, nil
}

// take answers a worker that takes the answer to call and is about to
// run it: fresh for the first taker of an answer given in this dispatch,
// and from then on the call may have run. An answer this dispatch did not
// give (a restarted coordinator answered from the record) is not fresh.
//
// A11: fresh only for the first worker that takes the answer.
func (r *remoteApprover) take(call string) work.ApprovalReply {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.calls[call]
	if !ok {
		return work.ApprovalReply{Status: work.ApprovalAnswered}
	}
	select {
	case <-c.done:
	default:
		return work.ApprovalReply{Status: work.ApprovalAnswered} // not answered yet: no fresh answer to take
	}
	rep := c.reply
	rep.Fresh = rep.Status == work.ApprovalAnswered && rep.Fresh && !c.taken
	c.taken = c.taken || rep.Status == work.ApprovalAnswered
	return rep
}

func (r *remoteApprover) decide(c *remoteCall, p runrecord.PendingCall, policy spec.Approve, grant *runrecord.Grant) {
	var g runrecord.Grant
	if grant != nil {
		g = *grant
	}
	ans, needed, fresh, err := r.g.decide(r.ctx, p, policy, g)
	rep := work.ApprovalReply{Status: work.ApprovalAnswered, Answer: &ans, Fresh: fresh}
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || r.ctx.Err() != nil:
		rep = work.ApprovalReply{Status: work.ApprovalPending}
	case err != nil:
		rep = work.ApprovalReply{Status: work.ApprovalRefused, Reason: err.Error()}
	case !needed:
		rep = work.ApprovalReply{Status: work.ApprovalFree}
	}
	r.mu.Lock()
	c.reply = rep
	r.mu.Unlock()
	close(c.done)
}
