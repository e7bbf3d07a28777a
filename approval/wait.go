package approval

// Waiting for an answer, and keeping answers: in the record's folder
// (one file a call, the first one stands) or, without a record, in
// memory; approvals.jsonl journals what the run acted on.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
)

// await lists the call as pending and waits for its answer, then journals
// the answer (synced) before returning it.
func (g *Gate) await(ctx context.Context, p runrecord.PendingCall) (runrecord.Answer, error) {
	p.Since = g.now()
	ans, ok, err := g.lookup(p.Call)
	if err != nil {
		return runrecord.Answer{}, err
	}
	if !ok {
		switch g.mode {
		case Auto:
			ans, ok = runrecord.Answer{Call: p.Call, Decision: runrecord.Approved, By: "auto", Time: g.now()}, true
		case Deny:
			ans, ok = runrecord.Answer{Call: p.Call, Decision: runrecord.Rejected, Reason: g.denyReason, By: "deny", Time: g.now()}, true
		}
		if ok {
			// Written like any answer, so a resume reads the same one.
			if ans, err = g.put(ans); err != nil {
				return runrecord.Answer{}, err
			}
		}
	}
	if !ok && g.mode == Stop {
		return runrecord.Answer{}, g.stop(p)
	}
	if !ok {
		if ans, err = g.wait(ctx, p); err != nil {
			return runrecord.Answer{}, err
		}
	}
	g.mu.Lock()
	if ans.Decision != runrecord.Rejected {
		g.first[p.Tool] = true
	}
	g.unlist(p.Call)
	g.mu.Unlock()
	if err := g.journal(runrecord.ApprovalLine{Kind: "answered", PendingCall: p, Answer: &ans}); err != nil {
		return runrecord.Answer{}, err
	}
	g.mu.Lock()
	g.taken[p.Call] = ans
	g.mu.Unlock()
	g.emit(event.Event{Type: event.ApprovalAnswered, Task: p.Task, Agent: p.Agent, Tool: p.Tool, Approval: p.Call,
		Status: ans.Decision, Args: ans.Args, Reason: ans.Reason, By: ans.By})
	return ans, nil
}

// granted records a call that runs without asking because a loaded
// skill's allowed-tools lists it: a "granted" line in approvals.jsonl and
// an approval.granted event, so the record says why nobody was asked. It
// does not count as an approval for approve: first — no person saw it.
//
// A16: a granted call is on record with the skill and entry that let it run.
func (g *Gate) granted(p runrecord.PendingCall, grant runrecord.Grant) error {
	p.Since = g.now()
	if err := g.journal(runrecord.ApprovalLine{Kind: "granted", PendingCall: p, Grant: &grant}); err != nil {
		return err
	}
	g.emit(event.Event{Type: event.ApprovalGranted, Task: p.Task, Agent: p.Agent, Tool: p.Tool, Approval: p.Call,
		Args: p.Args, Skill: grant.Skill, Reason: grant.Rule})
	return nil
}

// wait lists p as pending until an answer arrives, the timeout answers
// for it, or ctx ends.
func (g *Gate) wait(ctx context.Context, p runrecord.PendingCall) (runrecord.Answer, error) {
	g.mu.Lock()
	g.unlist(p.Call) // listed by the stopped run this one resumes
	g.pending = append(g.pending, p)
	g.publish()
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if ctx.Err() != nil && g.stopped != nil && g.stopped() {
			return // the run stopped: run.json keeps the call pending
		}
		g.unlist(p.Call)
	}()
	if err := g.journal(runrecord.ApprovalLine{Kind: "requested", PendingCall: p}); err != nil {
		return runrecord.Answer{}, err
	}
	g.emit(event.Event{Type: event.ApprovalRequested, Task: p.Task, Agent: p.Agent, Tool: p.Tool, Approval: p.Call, Args: p.Args})
	// A task waiting for a person is not work: its slot goes to others.
	unpark := board.Park(ctx)
	ans, err := g.poll(ctx, p)
	if uerr := unpark(); err == nil && uerr != nil {
		err = uerr
	}
	return ans, err
}

// stop lists p as pending, says so (approvals.jsonl, the
// approval.requested event) and stops the run: nobody here can answer,
// so the call waits in run.json for `fsd approve` and a resume.
//
// A17: without a person to ask, the run stops and the call stays pending.
func (g *Gate) stop(p runrecord.PendingCall) error {
	g.mu.Lock()
	g.unlist(p.Call)
	g.pending = append(g.pending, p)
	g.publish()
	halt := g.halt
	g.mu.Unlock()
	if err := g.journal(runrecord.ApprovalLine{Kind: "requested", PendingCall: p}); err != nil {
		return err
	}
	g.emit(event.Event{Type: event.ApprovalRequested, Task: p.Task, Agent: p.Agent, Tool: p.Tool, Approval: p.Call, Args: p.Args})
	err := fmt.Errorf("%w: %s (%s)", ErrWaiting, p.Call, p.Tool)
	if halt != nil {
		halt(err)
	}
	return err
}

func (g *Gate) poll(ctx context.Context, p runrecord.PendingCall) (runrecord.Answer, error) {
	var deadline <-chan time.Time
	if g.timeout > 0 {
		t := time.NewTimer(g.timeout)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		g.mu.Lock()
		wake := g.wake
		g.mu.Unlock()
		ans, ok, err := g.lookup(p.Call)
		if err != nil || ok {
			return ans, err
		}
		select {
		case <-ctx.Done():
			return runrecord.Answer{}, context.Cause(ctx)
		case <-deadline:
			// No answer in time: the call fails softly, as if rejected,
			// unless an answer won the race.
			return g.put(runrecord.Answer{Call: p.Call, Decision: runrecord.Rejected, By: "timeout", Time: g.now(),
				Reason: fmt.Sprintf("no answer within %s", g.timeout)})
		case <-wake:
		case <-tick.C:
		}
	}
}

// put records an answer unless the call has one; it returns the answer
// that stands.
func (g *Gate) put(ans runrecord.Answer) (runrecord.Answer, error) {
	ans, err := g.store(ans)
	if errors.Is(err, runrecord.ErrAnswered) {
		cur, _, rerr := g.lookup(ans.Call)
		return cur, rerr
	}
	return ans, err
}

// store records an answer once (runrecord.ErrAnswered after that) and wakes the
// waiting calls of this process. It returns the answer as recorded
// (sealed, in a record).
//
// A4: the first answer stands; later ones get ErrAnswered.
func (g *Gate) store(ans runrecord.Answer) (runrecord.Answer, error) {
	if g.dir != "" {
		var err error
		if ans, err = runrecord.WriteAnswer(g.dir, g.key, ans); err != nil {
			return ans, err
		}
	} else {
		g.mu.Lock()
		if _, ok := g.memory[ans.Call]; ok {
			g.mu.Unlock()
			return ans, fmt.Errorf("call %s: %w", ans.Call, runrecord.ErrAnswered)
		}
		g.memory[ans.Call] = ans
		g.mu.Unlock()
	}
	g.mu.Lock()
	close(g.wake)
	g.wake = make(chan struct{})
	g.mu.Unlock()
	return ans, nil
}

func (g *Gate) lookup(call string) (runrecord.Answer, bool, error) {
	if g.dir == "" {
		g.mu.Lock()
		defer g.mu.Unlock()
		ans, ok := g.memory[call]
		return ans, ok, nil
	}
	return runrecord.ReadAnswer(g.dir, g.key, call)
}

// journal appends a line to approvals.jsonl and syncs it: an "answered"
// line is durable before the call may run.
//
// A5: the answered line is durable before the call may run.
func (g *Gate) journal(l runrecord.ApprovalLine) error {
	l.Schema = nil // run.json lists it while the call waits; the journal needs it not
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.file == nil {
		return nil
	}
	if _, err := g.file.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("run record: %s: %w", runrecord.ApprovalsFile, err)
	}
	if err := g.file.Sync(); err != nil {
		return fmt.Errorf("run record: %s: %w", runrecord.ApprovalsFile, err)
	}
	return nil
}

// unlist takes a call off the pending list. g.mu is held.
func (g *Gate) unlist(call string) {
	n := len(g.pending)
	g.pending = slices.DeleteFunc(g.pending, func(x runrecord.PendingCall) bool { return x.Call == call })
	if len(g.pending) != n {
		g.publish()
	}
}

// publish tells run.json about the pending calls. g.mu is held.
//
// A7: run.json says waiting and lists the pending calls.
func (g *Gate) publish() {
	if g.summary != nil {
		g.summary(slices.Clone(g.pending))
	}
}

// Pending returns the calls waiting for approval now, oldest first.
func (g *Gate) Pending() []runrecord.PendingCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.pending)
}

// Answer answers a pending call (by its id, PendingCall.Call): a person's
// answer, given in this process. A zero Time is now and an empty
// Decision approves. The first answer to a call stands: a later one, from
// here or from `fsd approve`, gets runrecord.ErrAnswered.
func (g *Gate) Answer(a runrecord.Answer) error {
	if a.Time.IsZero() {
		a.Time = g.now()
	}
	if a.Decision == "" {
		a.Decision = runrecord.Approved
	}
	if a.Decision == runrecord.Edited && !json.Valid(a.Args) {
		return errors.New("edited arguments are not JSON")
	}
	_, err := g.store(a)
	return err
}
