package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/work"
)

// ApprovalMode says who answers the calls that need approval.
type ApprovalMode string

// The approval modes.
const (
	// ApprovalAsk waits for a person (the default): Run.Answer, the CLI's
	// prompt, or `fsd approve` writing into the run record.
	ApprovalAsk ApprovalMode = "ask"
	// ApprovalAuto approves every call at once (CI); each is still
	// journaled and reported as answered by "auto".
	ApprovalAuto ApprovalMode = "auto"
	// ApprovalDeny rejects every call that needs approval: the model
	// reads why.
	ApprovalDeny ApprovalMode = "deny"
)

// PendingCall is a call waiting for approval.
type PendingCall = runrecord.PendingCall

// Answer is a person's answer to a pending call.
type Answer = runrecord.Answer

// ErrAnswered is returned by Run.Answer for a call answered already.
var ErrAnswered = runrecord.ErrAnswered

// toolApproval is what a call's tool declares: its own policy, its
// skill's, and whether it acts outside fsd (only those take the skill's
// and the workflow's defaults).
type toolApproval struct {
	own, skill spec.Approve
	external   bool
}

// approvalPoll is how often a waiting call looks for an answer written by
// another process (`fsd approve`). An answer given in this process wakes
// it at once.
const approvalPoll = 100 * time.Millisecond

// approvals holds a run's calls waiting for approval and their answers.
// One per run, shared by every generator; safe for concurrent use.
type approvals struct {
	mode    ApprovalMode
	timeout time.Duration // 0: wait as long as it takes
	def     spec.Approve  // the workflow's default
	now     func() time.Time
	emit    func(event.Event)
	// dir is the run record's folder: answers are files there. "" keeps
	// them in memory (a run without a record).
	dir string
	// stopped reports whether the run (not just a task) was stopped: a
	// call waiting then stays pending in run.json.
	stopped func() bool
	// summary rewrites run.json with the pending calls.
	summary func(pending []PendingCall)
	// denyReason is the reason ApprovalDeny gives.
	denyReason string

	mu      sync.Mutex
	pending []PendingCall
	memory  map[string]Answer // answers when dir is ""
	taken   map[string]Answer // answers the run acted on (approvals.jsonl)
	first   map[string]bool   // tools approved once in this run (approve: first)
	file    *os.File          // approvals.jsonl
	wake    chan struct{}     // closed when an answer arrives in this process

	// ask, on a remote worker (fsd worker), sends the calls that need
	// approval to the run's coordinator, whose approvals answer them.
	ask work.Approver
	log zerolog.Logger
}

func newApprovals(mode ApprovalMode, timeout time.Duration, def spec.Approve, now func() time.Time) *approvals {
	if mode == "" {
		mode = ApprovalAsk
	}
	return &approvals{mode: mode, timeout: timeout, def: def, now: now,
		denyReason: "calls that need approval are denied in this run (--approve deny)",
		memory:     map[string]Answer{}, taken: map[string]Answer{}, first: map[string]bool{}, wake: make(chan struct{})}
}

// open attaches the run record: it reads the answers an earlier process
// of the run acted on (a resume) and opens approvals.jsonl for appending.
func (a *approvals) open(dir string) error {
	path := filepath.Join(dir, runrecord.ApprovalsFile)
	if _, err := journal.RepairTail(path); err != nil {
		return fmt.Errorf("run record: repair %s: %w", runrecord.ApprovalsFile, err)
	}
	if b, err := os.ReadFile(path); err == nil {
		for _, line := range splitLines(b) {
			var l runrecord.ApprovalLine
			if json.Unmarshal(line, &l) != nil || l.Kind != "answered" || l.Answer == nil {
				continue
			}
			a.taken[l.Call] = *l.Answer
			if l.Answer.Decision != runrecord.Rejected {
				a.first[l.Tool] = true
			}
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("run record: %w", err)
	}
	a.dir, a.file = dir, f
	return nil
}

func (a *approvals) close() error {
	if a == nil || a.file == nil {
		return nil
	}
	err := a.file.Close()
	a.file = nil
	return err
}

// policy is the approval policy of a call: the tool's own, else — for a
// tool acting outside fsd — its skill's, else the workflow's, else never.
func (a *approvals) policy(t toolApproval) spec.Approve {
	p := t.own
	if t.external {
		p = p.Or(t.skill).Or(a.def)
	}
	return p.Or(spec.ApproveNever)
}

// gateResult is what the gate decided about a call.
type gateResult struct {
	// reject is the error result the model reads instead of the call's.
	reject *model.ToolResult
	// args are the arguments to run the call with (edited or not).
	args json.RawMessage
	// note prefixes the call's result (edited arguments).
	note string
	// fresh: the call was approved by this process just now, so it never
	// ran before; the in-doubt rule of a resume does not apply to it.
	fresh bool
}

// gate stands before a call that may need approval. For a call that
// needs none it returns the call's arguments. Otherwise it waits for the
// answer — already on record, given now, by the mode, or by the timeout —
// and journals it before the call may run. While it waits, a board task
// gives its concurrency slot back. The error is non-nil only when ctx
// ended the wait: the call stays pending and runs nothing.
func (a *approvals) gate(ctx context.Context, p PendingCall, t toolApproval) (gateResult, error) {
	res := gateResult{args: p.Args}
	if a == nil {
		return res, nil
	}
	a.mu.Lock()
	policy := a.policy(t)
	a.mu.Unlock()
	ans, needed, fresh, err := a.decide(ctx, p, policy)
	if err != nil || !needed {
		return res, err
	}
	res.fresh = fresh
	switch ans.Decision {
	case runrecord.Rejected:
		reason := ans.Reason
		if reason == "" {
			reason = "no reason given"
		}
		r := model.ToolResult{Text: fmt.Sprintf("The call was not run: the approver rejected it (%s).", reason), IsError: true, Code: "approval_rejected"}
		res.reject = &r
	case runrecord.Edited:
		res.args = ans.Args
		res.note = fmt.Sprintf("[the approver edited the arguments to %s]\n", ans.Args)
	}
	return res, nil
}

// decide answers a call of the given policy: needed is false when it
// runs without an answer (approve: never, or a first tool approved
// already); fresh when the answer was given for this asking (not taken
// from the record). A remote worker's approvals ask the coordinator.
func (a *approvals) decide(ctx context.Context, p PendingCall, policy spec.Approve) (ans Answer, needed, fresh bool, err error) {
	if a.ask != nil {
		return a.askRemote(ctx, p, policy)
	}
	a.mu.Lock()
	ans, taken := a.taken[p.Call]
	approvedOnce := a.first[p.Tool]
	a.mu.Unlock()
	if taken {
		return ans, true, false, nil
	}
	if policy == spec.ApproveNever || (policy == spec.ApproveFirst && approvedOnce) {
		return Answer{}, false, false, nil
	}
	if ans, err = a.await(ctx, p); err != nil {
		return Answer{}, false, false, err
	}
	return ans, true, true, nil
}

// await lists the call as pending and waits for its answer, then journals
// the answer (synced) before returning it.
func (a *approvals) await(ctx context.Context, p PendingCall) (Answer, error) {
	p.Since = a.now()
	ans, ok, err := a.lookup(p.Call)
	if err != nil {
		return Answer{}, err
	}
	if !ok {
		switch a.mode {
		case ApprovalAuto:
			ans, ok = Answer{Call: p.Call, Decision: runrecord.Approved, By: "auto", Time: a.now()}, true
		case ApprovalDeny:
			ans, ok = Answer{Call: p.Call, Decision: runrecord.Rejected, Reason: a.denyReason, By: "deny", Time: a.now()}, true
		}
		if ok {
			// Written like any answer, so a resume reads the same one.
			if ans, err = a.put(ans); err != nil {
				return Answer{}, err
			}
		}
	}
	if !ok {
		if ans, err = a.wait(ctx, p); err != nil {
			return Answer{}, err
		}
	}
	a.mu.Lock()
	if ans.Decision != runrecord.Rejected {
		a.first[p.Tool] = true
	}
	a.unlist(p.Call)
	a.mu.Unlock()
	if err := a.journal(runrecord.ApprovalLine{Kind: "answered", PendingCall: p, Answer: &ans}); err != nil {
		return Answer{}, err
	}
	a.mu.Lock()
	a.taken[p.Call] = ans
	a.mu.Unlock()
	a.emit(event.Event{Type: event.ApprovalAnswered, Task: p.Task, Agent: p.Agent, Tool: p.Tool, Approval: p.Call,
		Status: ans.Decision, Args: ans.Args, Reason: ans.Reason, By: ans.By})
	return ans, nil
}

// wait lists p as pending until an answer arrives, the timeout answers
// for it, or ctx ends.
func (a *approvals) wait(ctx context.Context, p PendingCall) (Answer, error) {
	a.mu.Lock()
	a.unlist(p.Call) // listed by the stopped run this one resumes
	a.pending = append(a.pending, p)
	a.publish()
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if ctx.Err() != nil && a.stopped != nil && a.stopped() {
			return // the run stopped: run.json keeps the call pending
		}
		a.unlist(p.Call)
	}()
	if err := a.journal(runrecord.ApprovalLine{Kind: "requested", PendingCall: p}); err != nil {
		return Answer{}, err
	}
	a.emit(event.Event{Type: event.ApprovalRequested, Task: p.Task, Agent: p.Agent, Tool: p.Tool, Approval: p.Call, Args: p.Args})
	// A task waiting for a person is not work: its slot goes to others.
	unpark := board.Park(ctx)
	ans, err := a.poll(ctx, p)
	if uerr := unpark(); err == nil && uerr != nil {
		err = uerr
	}
	return ans, err
}

func (a *approvals) poll(ctx context.Context, p PendingCall) (Answer, error) {
	var deadline <-chan time.Time
	if a.timeout > 0 {
		t := time.NewTimer(a.timeout)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(approvalPoll)
	defer tick.Stop()
	for {
		a.mu.Lock()
		wake := a.wake
		a.mu.Unlock()
		ans, ok, err := a.lookup(p.Call)
		if err != nil || ok {
			return ans, err
		}
		select {
		case <-ctx.Done():
			return Answer{}, context.Cause(ctx)
		case <-deadline:
			// No answer in time: the call fails softly, as if rejected,
			// unless an answer won the race.
			return a.put(Answer{Call: p.Call, Decision: runrecord.Rejected, By: "timeout", Time: a.now(),
				Reason: fmt.Sprintf("no answer within %s", a.timeout)})
		case <-wake:
		case <-tick.C:
		}
	}
}

// put records an answer unless the call has one; it returns the answer
// that stands.
func (a *approvals) put(ans Answer) (Answer, error) {
	err := a.store(ans)
	if errors.Is(err, ErrAnswered) {
		cur, _, rerr := a.lookup(ans.Call)
		return cur, rerr
	}
	return ans, err
}

// store records an answer once (ErrAnswered after that) and wakes the
// waiting calls of this process.
func (a *approvals) store(ans Answer) error {
	if a.dir != "" {
		if err := runrecord.WriteAnswer(a.dir, ans); err != nil {
			return err
		}
	} else {
		a.mu.Lock()
		if _, ok := a.memory[ans.Call]; ok {
			a.mu.Unlock()
			return fmt.Errorf("call %s: %w", ans.Call, ErrAnswered)
		}
		a.memory[ans.Call] = ans
		a.mu.Unlock()
	}
	a.mu.Lock()
	close(a.wake)
	a.wake = make(chan struct{})
	a.mu.Unlock()
	return nil
}

func (a *approvals) lookup(call string) (Answer, bool, error) {
	if a.dir == "" {
		a.mu.Lock()
		defer a.mu.Unlock()
		ans, ok := a.memory[call]
		return ans, ok, nil
	}
	return runrecord.ReadAnswer(a.dir, call)
}

// journal appends a line to approvals.jsonl and syncs it: an "answered"
// line is durable before the call may run.
func (a *approvals) journal(l runrecord.ApprovalLine) error {
	if a.file == nil {
		return nil
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.file.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("run record: %s: %w", runrecord.ApprovalsFile, err)
	}
	if err := a.file.Sync(); err != nil {
		return fmt.Errorf("run record: %s: %w", runrecord.ApprovalsFile, err)
	}
	return nil
}

// unlist takes a call off the pending list. a.mu is held.
func (a *approvals) unlist(call string) {
	n := len(a.pending)
	a.pending = slices.DeleteFunc(a.pending, func(x PendingCall) bool { return x.Call == call })
	if len(a.pending) != n {
		a.publish()
	}
}

// publish tells run.json about the pending calls. a.mu is held.
func (a *approvals) publish() {
	if a.summary != nil {
		a.summary(slices.Clone(a.pending))
	}
}

// Pending returns the calls waiting for approval now, oldest first.
func (a *approvals) list() []PendingCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.pending)
}

// Pending returns the run's calls waiting for approval, oldest first.
func (r *Run) Pending() []PendingCall { return r.appr.list() }

// Answer answers a pending call (by its id, PendingCall.Call). The first
// answer to a call stands: a later one, from here or from `fsd approve`,
// gets ErrAnswered.
func (r *Run) Answer(a Answer) error {
	if a.Time.IsZero() {
		a.Time = r.now()
	}
	if a.Decision == "" {
		a.Decision = runrecord.Approved
	}
	if a.Decision == runrecord.Edited && !json.Valid(a.Args) {
		return errors.New("edited arguments are not JSON")
	}
	return r.appr.store(a)
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		if i > 0 {
			out = append(out, b[:i])
		}
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return out
}

// watchApprovals connects the run's approvals to its record: answers are
// files in the record's folder, and run.json says "waiting" and lists the
// pending calls while any wait. sum is run.json as written at start.
func (r *Run) watchApprovals(runCtx context.Context, sum *RunSummary) error {
	a := r.appr
	a.stopped = func() bool { return runCtx.Err() != nil }
	// A resumed run starts with the calls its first process left waiting:
	// they stay listed until the replay reaches them.
	a.pending = slices.Clone(sum.Pending)
	if r.rec == nil {
		return nil
	}
	if err := a.open(r.rec.dir); err != nil {
		return err
	}
	a.summary = func(pending []PendingCall) {
		s := *sum
		s.Status, s.Pending = "running", pending
		if len(pending) > 0 {
			s.Status = "waiting"
		}
		r.acct.summarize(&s)
		if err := r.rec.writeJSON("run.json", s); err != nil {
			r.log.Warn().Err(err).Msg("could not list the pending approvals in run.json")
		}
	}
	return nil
}
