package approval

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

// Mode says who answers the calls that need approval.
type Mode string

// The approval modes.
const (
	// Ask waits for a person (the default): Run.Answer, the CLI's
	// prompt, or `fsd approve` writing into the run record.
	Ask Mode = "ask"
	// Auto approves every call at once (CI); each is still journaled and
	// reported as answered by "auto".
	Auto Mode = "auto"
	// Deny rejects every call that needs approval: the model reads why.
	Deny Mode = "deny"
)

// ParseMode checks a mode; "" is Ask.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return Ask, nil
	case Ask, Auto, Deny:
		return m, nil
	}
	return "", fmt.Errorf("unknown approval mode %q (want ask, auto or deny)", s)
}

// Tool is what a call's tool declares about approval: its own policy,
// its skill's (or MCP server's), and whether it acts outside fsd (only
// those take the skill's and the workflow's defaults). The zero Tool
// never asks.
type Tool struct {
	Own, Skill spec.Approve
	External   bool
}

// pollEvery is how often a waiting call looks for an answer written by
// another process (`fsd approve`). An answer given in this process wakes
// it at once.
const pollEvery = 100 * time.Millisecond

// Config is what a Gate is made with.
type Config struct {
	// Mode says who answers; "" is Ask.
	Mode Mode
	// Timeout rejects a call that waited this long; 0 waits as long as it
	// takes.
	Timeout time.Duration
	// Default is the workflow's approve: policy.
	Default spec.Approve
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Emit sends the approval.requested and approval.answered events;
	// nil sends none.
	Emit func(event.Event)
	// Log is where a worker's gate says it waits for the run.
	Log zerolog.Logger
}

// Gate holds a run's calls waiting for approval and their answers. One
// per run, shared by every generator; safe for concurrent use. A nil
// Gate asks for nothing.
type Gate struct {
	mode    Mode
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
	summary func(pending []runrecord.PendingCall)
	// denyReason is the reason Deny gives.
	denyReason string

	mu      sync.Mutex
	pending []runrecord.PendingCall
	memory  map[string]runrecord.Answer // answers when dir is ""
	taken   map[string]runrecord.Answer // answers the run acted on (approvals.jsonl)
	first   map[string]bool             // tools approved once in this run (approve: first)
	file    *os.File                    // approvals.jsonl
	wake    chan struct{}               // closed when an answer arrives in this process

	// ask, on a remote worker (fsd worker), sends the calls that need
	// approval to the run's coordinator, whose gate answers them.
	ask work.Approver
	log zerolog.Logger
}

// New returns a run's gate, with no record yet (answers in memory) and
// no call pending.
func New(c Config) *Gate {
	if c.Mode == "" {
		c.Mode = Ask
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Emit == nil {
		c.Emit = func(event.Event) {}
	}
	return &Gate{mode: c.Mode, timeout: c.Timeout, def: c.Default, now: c.Now, emit: c.Emit, log: c.Log,
		denyReason: "calls that need approval are denied in this run (--approve deny)",
		memory:     map[string]runrecord.Answer{}, taken: map[string]runrecord.Answer{}, first: map[string]bool{}, wake: make(chan struct{})}
}

// Default is the workflow's approve: policy the gate was made with.
func (g *Gate) Default() spec.Approve { return g.def }

// Timeout is the approval timeout the gate was made with (0: none).
func (g *Gate) Timeout() time.Duration { return g.timeout }

// Start readies the gate for a run's execution, before any call may
// ask: stopped reports whether the run (not just a task) was stopped —
// a call waiting then stays pending — and pending are the calls an
// earlier process of the run left waiting, listed until the replay
// reaches them and asks again.
func (g *Gate) Start(stopped func() bool, pending []runrecord.PendingCall) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = stopped
	g.pending = slices.Clone(pending)
}

// Open attaches the run record's folder dir: it reads the answers an
// earlier process of the run acted on (a resume) and opens
// approvals.jsonl for appending; answers are files in dir from now on.
// summary is called, with the lock held, whenever the pending calls
// change, to rewrite run.json.
func (g *Gate) Open(dir string, summary func(pending []runrecord.PendingCall)) error {
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
			g.taken[l.Call] = *l.Answer
			if l.Answer.Decision != runrecord.Rejected {
				g.first[l.Tool] = true
			}
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("run record: %w", err)
	}
	g.dir, g.file, g.summary = dir, f, summary
	return nil
}

// Close closes approvals.jsonl.
func (g *Gate) Close() error {
	if g == nil || g.file == nil {
		return nil
	}
	err := g.file.Close()
	g.file = nil
	return err
}

// Policy is the approval policy of a call: the tool's own, else — for a
// tool acting outside fsd — its skill's, else the workflow's, else never.
func (g *Gate) Policy(t Tool) spec.Approve {
	p := t.Own
	if t.External {
		p = p.Or(t.Skill).Or(g.def)
	}
	return p.Or(spec.ApproveNever)
}

// Result is what the gate decided about a call.
type Result struct {
	// Reject is the error result the model reads instead of the call's;
	// nil runs the call.
	Reject *model.ToolResult
	// Args are the arguments to run the call with (edited or not).
	Args json.RawMessage
	// Note prefixes the call's result (edited arguments).
	Note string
	// Fresh: the call was approved by this process just now, so it never
	// ran before; the in-doubt rule of a resume does not apply to it.
	Fresh bool
}

// Check stands before a call that may need approval. For a call that
// needs none it returns the call's arguments. Otherwise it waits for the
// answer — already on record, given now, by the mode, or by the timeout —
// and journals it before the call may run. While it waits, a board task
// gives its concurrency slot back. The error is non-nil only when ctx
// ended the wait: the call stays pending and runs nothing.
func (g *Gate) Check(ctx context.Context, p runrecord.PendingCall, t Tool) (Result, error) {
	res := Result{Args: p.Args}
	if g == nil {
		return res, nil
	}
	g.mu.Lock()
	policy := g.Policy(t)
	g.mu.Unlock()
	ans, needed, fresh, err := g.decide(ctx, p, policy)
	if err != nil || !needed {
		return res, err
	}
	res.Fresh = fresh
	switch ans.Decision {
	case runrecord.Rejected:
		reason := ans.Reason
		if reason == "" {
			reason = "no reason given"
		}
		r := model.ToolResult{Text: fmt.Sprintf("The call was not run: the approver rejected it (%s).", reason), IsError: true, Code: "approval_rejected"}
		res.Reject = &r
	case runrecord.Edited:
		res.Args = ans.Args
		res.Note = fmt.Sprintf("[the approver edited the arguments to %s]\n", ans.Args)
	}
	return res, nil
}

// decide answers a call of the given policy: needed is false when it
// runs without an answer (approve: never, or a first tool approved
// already); fresh when the answer was given for this asking (not taken
// from the record). A worker's gate asks the run's.
func (g *Gate) decide(ctx context.Context, p runrecord.PendingCall, policy spec.Approve) (ans runrecord.Answer, needed, fresh bool, err error) {
	if g.ask != nil {
		return g.askRemote(ctx, p, policy)
	}
	g.mu.Lock()
	ans, taken := g.taken[p.Call]
	approvedOnce := g.first[p.Tool]
	g.mu.Unlock()
	if taken {
		return ans, true, false, nil
	}
	if policy == spec.ApproveNever || (policy == spec.ApproveFirst && approvedOnce) {
		return runrecord.Answer{}, false, false, nil
	}
	if ans, err = g.await(ctx, p); err != nil {
		return runrecord.Answer{}, false, false, err
	}
	return ans, true, true, nil
}

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
	err := g.store(ans)
	if errors.Is(err, runrecord.ErrAnswered) {
		cur, _, rerr := g.lookup(ans.Call)
		return cur, rerr
	}
	return ans, err
}

// store records an answer once (runrecord.ErrAnswered after that) and wakes the
// waiting calls of this process.
func (g *Gate) store(ans runrecord.Answer) error {
	if g.dir != "" {
		if err := runrecord.WriteAnswer(g.dir, ans); err != nil {
			return err
		}
	} else {
		g.mu.Lock()
		if _, ok := g.memory[ans.Call]; ok {
			g.mu.Unlock()
			return fmt.Errorf("call %s: %w", ans.Call, runrecord.ErrAnswered)
		}
		g.memory[ans.Call] = ans
		g.mu.Unlock()
	}
	g.mu.Lock()
	close(g.wake)
	g.wake = make(chan struct{})
	g.mu.Unlock()
	return nil
}

func (g *Gate) lookup(call string) (runrecord.Answer, bool, error) {
	if g.dir == "" {
		g.mu.Lock()
		defer g.mu.Unlock()
		ans, ok := g.memory[call]
		return ans, ok, nil
	}
	return runrecord.ReadAnswer(g.dir, call)
}

// journal appends a line to approvals.jsonl and syncs it: an "answered"
// line is durable before the call may run.
func (g *Gate) journal(l runrecord.ApprovalLine) error {
	if g.file == nil {
		return nil
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
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
	return g.store(a)
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
