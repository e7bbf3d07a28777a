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
	// Stop is for a run nobody can answer while it runs (no terminal, CI):
	// a call with no answer on record stays pending and stops the run
	// with ErrWaiting; `fsd approve` answers it and a resume goes on.
	Stop Mode = "stop"
)

// ErrWaiting ends a run in mode Stop at the first call that needs an
// answer it does not have: run.json says waiting and lists the call.
var ErrWaiting = errors.New("stopped: a call waits for approval")

// ParseMode checks a mode; "" is Ask.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return Ask, nil
	case Ask, Auto, Deny, Stop:
		return m, nil
	}
	return "", fmt.Errorf("unknown approval mode %q (want ask, auto, deny or stop)", s)
}

// Tool is what a call's tool declares about approval: its own policy,
// its skill's (or MCP server's), and whether it acts outside fsd (only
// those take the skill's and the workflow's defaults). The zero Tool
// never asks.
type Tool struct {
	Own, Skill spec.Approve
	External   bool
	// Input is the tool's input JSON Schema: a pending call carries it,
	// so edited arguments are checked before they are accepted.
	Input json.RawMessage
	// Grant, when its Skill is set, is the trusted loaded skill whose
	// allowed-tools lists the call: it runs without asking, unless the
	// tool's own approve says otherwise or the mode is Deny.
	Grant runrecord.Grant
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
	// Log is where a worker's gate says it waits for the run, and a
	// resume that an answer on record does not verify.
	Log zerolog.Logger
	// Key seals the answers written into the run record and verifies
	// those read from it (runrecord.Key): with the zero Key no answer
	// file verifies, so only Answer answers a run with a record.
	Key runrecord.Key
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
	// halt stops the run (mode Stop).
	halt func(error)
	// summary rewrites run.json with the pending calls.
	summary func(pending []runrecord.PendingCall)
	// denyReason is the reason Deny gives.
	denyReason string
	// key seals and verifies the answer files.
	key runrecord.Key

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
	return &Gate{mode: c.Mode, timeout: c.Timeout, def: c.Default, now: c.Now, emit: c.Emit, log: c.Log, key: c.Key,
		denyReason: "calls that need approval are denied in this run (--approve deny)",
		memory:     map[string]runrecord.Answer{}, taken: map[string]runrecord.Answer{}, first: map[string]bool{}, wake: make(chan struct{})}
}

// Default is the workflow's approve: policy the gate was made with.
func (g *Gate) Default() spec.Approve { return g.def }

// Timeout is the approval timeout the gate was made with (0: none).
func (g *Gate) Timeout() time.Duration { return g.timeout }

// Start readies the gate for a run's execution, before any call may
// ask: stopped reports whether the run (not just a task) was stopped —
// a call waiting then stays pending —, halt stops the run (mode Stop)
// and pending are the calls an earlier process of the run left waiting,
// listed until the replay reaches them and asks again.
func (g *Gate) Start(stopped func() bool, halt func(error), pending []runrecord.PendingCall) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped, g.halt = stopped, halt
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
	answered, err := runrecord.ReadAnswered(dir)
	if err != nil {
		return fmt.Errorf("run record: %w", err)
	}
	for _, l := range answered {
		if !runrecord.VerifyAnswer(dir, g.key, *l.Answer) {
			// Not an answer fsd gave: the call asks again rather than
			// run with what nobody approved.
			g.log.Warn().Str("call", l.Call).Str("file", runrecord.ApprovalsFile).
				Msg("ignoring an answer on record whose seal does not verify; the call waits for a new one")
			continue
		}
		g.taken[l.Call] = *l.Answer
		if l.Answer.Decision != runrecord.Rejected {
			g.first[l.Tool] = true
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("run record: %w", err)
	}
	g.dir, g.file, g.summary = dir, f, summary
	return nil
}

// Close closes approvals.jsonl. A call answered after it (a worker's
// call still deciding as the run ends) is not journaled.
func (g *Gate) Close() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.file == nil {
		return nil
	}
	err := g.file.Close()
	g.file = nil
	return err
}

// Policy is the approval policy of a call: the tool's own, else — for a
// tool acting outside fsd — its skill's, else the workflow's, else never.
//
// A1: where a call's policy comes from.
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
//
// A3, A8: before anything runs; a rejection or an edit is the model's to
// read.
func (g *Gate) Check(ctx context.Context, p runrecord.PendingCall, t Tool) (Result, error) {
	res := Result{Args: p.Args}
	if g == nil {
		return res, nil
	}
	g.mu.Lock()
	policy := g.Policy(t)
	g.mu.Unlock()
	p.Schema = t.Input
	grant := t.Grant
	if t.Own != "" {
		// The tool's own approve is its author's word for this tool, as an
		// ask rule beats an allow rule in Claude Code: it still asks.
		grant = runrecord.Grant{}
	}
	ans, needed, fresh, err := g.decide(ctx, p, policy, grant)
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
// runs without an answer (approve: never, a first tool approved already,
// or allowed-tools grants it); fresh when the answer was given for this
// asking (not taken from the record). A worker's gate asks the run's.
//
// A2: first is per run and per tool name; a rejection does not count.
func (g *Gate) decide(ctx context.Context, p runrecord.PendingCall, policy spec.Approve, grant runrecord.Grant) (ans runrecord.Answer, needed, fresh bool, err error) {
	if g.ask != nil {
		return g.askRemote(ctx, p, policy, grant)
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
	if grant.Skill != "" && g.mode != Deny {
		return runrecord.Answer{}, false, false, g.granted(p, grant)
	}
	if ans, err = g.await(ctx, p); err != nil {
		return runrecord.Answer{}, false, false, err
	}
	return ans, true, true, nil
}
