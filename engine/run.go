package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/artifact"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/proc"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/mcptool"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/supply"
	"github.com/fsdrun/fsd/transcript"
	"github.com/fsdrun/fsd/work"
)

// Options configure a run. Only Model is required.
type Options struct {
	// Model answers every generator. Requests carry their Caller (host, or
	// agent and task), so a Model that must send agents to different
	// providers routes on it, as the CLI does for `model:` per agent.
	Model model.Model
	// Sink receives the client event stream; nil discards it.
	Sink event.Sink
	// RunsDir is where the run record goes (`.fsd/runs`); "" keeps no record.
	RunsDir string
	// RunID names the run; "" generates one.
	RunID string
	// Rand is the source of handles and run ids; nil is crypto/rand. Tests
	// and replays pass a seeded reader so handles are reproducible.
	Rand io.Reader
	// Logger gets debug logs; the zero value discards them.
	Logger zerolog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Reload reloads the project when a watched manifest changes (C4);
	// nil disables reloading.
	Reload func() (*spec.Project, error)
	// History is an earlier conversation the host continues: whole turns,
	// oldest first, starting at a user message. A service that keeps its
	// own chat history passes it here and the new input becomes the next
	// turn.
	History []model.Message
	// Resume replays an interrupted run's journal (LoadReplay): the run
	// keeps its id and record folder, completed model calls and command
	// tools are not repeated, and it goes on live from where it stopped.
	Resume *Replay
	// Seed seeds the handle source when Rand is nil; nil draws a random
	// seed. The seed is kept in run.json so a resume draws the same handles.
	Seed *[32]byte
	// HandleKey is the project's handle key (runrecord.HandleKey): with
	// neither Rand nor Seed set, handles are derived from what they stand
	// for under it, so every run of the project gives the same content
	// the same handle and sends the same requests, and a provider's prompt
	// cache serves one run from another. nil: handles are drawn, new every
	// run. A run whose record keeps a seed resumes with it, whatever key
	// is given; one that derived its handles needs the same key.
	HandleKey []byte
	// Meta is kept in run.json (the CLI stores its flags there for resume).
	Meta map[string]string
	// Trusted says whether a skill's command tools and stdio MCP servers
	// may run; nil trusts all.
	Trusted func(s *spec.Skill) bool
	// Observer watches the run, its generators, model calls and tool
	// calls (tracing); nil observes nothing.
	Observer Observer
	// Force resumes a run even if its workflow, script or a manifest
	// changed since it started (see ErrChanged).
	Force bool
	// Durability says when generators wait for the journal to be on
	// disk; "" is the workflow's `durability:`, else spec.DurabilityStep.
	Durability spec.Durability
	// flushDelay overrides journal.FlushDelay (tests make it long, so
	// only commits write the journal).
	flushDelay time.Duration
	// wrap replaces sandbox.Wrap (tests see a machine without a sandbox).
	wrap proc.Wrap
	// opened sees each task attempt's transcript as it is opened (tests
	// check that a finished task's is let go).
	opened func(task string, tr *transcript.Transcript)
	// session makes the run a turn of a session (Session.Start).
	session *turnOf
	// Approve says who answers calls that need approval: approval.Ask
	// (the default) waits for Run.Answer or an answer written into the
	// run record (fsd approve); approval.Auto approves them all,
	// approval.Deny rejects them all; approval.Stop stops the run at a
	// call with no answer on record (Execute's error wraps
	// approval.ErrWaiting, run.json says waiting).
	Approve approval.Mode
	// Strict fails the run when a skill was skipped or an MCP server
	// cannot start (ErrStrict); false is the workflow's `strict:`.
	Strict bool
	// ApprovalTimeout fails a call that waited this long for approval
	// softly: the model reads that no answer came. 0 waits as long as it
	// takes.
	ApprovalTimeout time.Duration
	// MCPIdle is how long the MCP servers of an unloaded skill stay up in
	// case it is read again: 0 is mcptool.DefaultIdle, negative closes
	// them at once. All close when the run ends.
	MCPIdle time.Duration
	// Dispatcher runs the board's tasks on workers in other processes
	// (fsd run --nats); nil runs them here. The host generator, the run
	// record and the live board stay with this process.
	Dispatcher work.Dispatcher
	// Redact takes the secrets of the workflow's transport settings out of
	// the run record (fsd passes natsboard.Redact). nil: a workflow with
	// board: settings is recorded without them, and its file is not
	// copied.
	Redact runrecord.Redact
	// Key seals what the record says for fsd's own later use (approval
	// answers, the workflow a resume runs) and verifies it when read
	// back; the zero Key is the user's (runrecord.UserKey) for a run that
	// keeps a record or resumes one.
	Key runrecord.Key
	// Secrets are values to mask besides those the run finds itself (the
	// values of fsd's *_KEY, *_TOKEN and *_SECRET variables, and of every
	// variable a skill's tools and MCP servers take from the environment):
	// a transport's credentials, say. Masked text reads [REDACTED].
	Secrets []string
	// Workspace is the run's workspace folder: the working folder of every
	// program the run starts for a skill, and the folder of the built-in
	// tools (Bash, Read, Write, Edit, Glob, Grep). "" is the workflow's
	// workspace:, else a fresh folder workspace/ in the run record, else
	// (no record) a fresh temporary folder removed when the run ends. A
	// resume works in the folder its run.json names; giving another is an
	// error.
	Workspace string
}

// Run is one execution of a workflow. Create it with New, start it with
// Execute. A Run is used once.
type Run struct {
	ID      string
	project *spec.Project
	wf      *spec.Workflow
	limits  spec.Limits
	opts    Options
	cat     *catalog
	arts    *artifact.Store
	rec     *runrecord.Writer
	ledger  *supply.Ledger
	log     zerolog.Logger
	now     func() time.Time
	seed    string
	// handleKey is the id of the key the run's handles are derived with
	// ("": they are drawn from seed).
	handleKey string
	tokens    *tokenCache

	// The run's parts hand these to its collaborators (the skill manager,
	// generators, the board, workers) instead of the run itself.
	ev   emitter
	acct *account
	box  *toolbox
	// appr holds the calls waiting for approval and their answers.
	appr *approval.Gate
	// strict fails the run on a skipped skill or an MCP server that
	// cannot start.
	strict *strictness
}

// Result is what a finished run produced.
type Result struct {
	RunID  string
	Answer string
	// Dir is the run record's folder, "" when no record was kept.
	Dir string
	// Workspace is the run's workspace folder, absolute; "" when it was a
	// temporary one (no record, none named), removed when the run ended.
	Workspace string
}

// journal is what the run goes on from: the interrupted run it resumes,
// or the turns a session's next turn follows; nil for a fresh run.
func (r *Run) journal() *Replay { return journalOf(r.opts) }

func journalOf(o Options) *Replay {
	if o.Resume != nil {
		return o.Resume
	}
	if o.session != nil {
		return o.session.journal
	}
	return nil
}

// ErrMaxSteps is returned when a generator reaches max-steps without a
// final answer (D8).
var ErrMaxSteps = errors.New("max-steps reached without a final answer")

// ErrBudget is returned when a generator would call the model after the
// run used up limits.max-input-tokens or limits.max-output-tokens.
var ErrBudget = errors.New("token budget reached")

// New prepares a run of p. It checks nothing about p that spec.Check
// already checks; call spec.LoadProject first.
func New(p *spec.Project, opts Options) (*Run, error) {
	if p == nil || p.Workflow == nil {
		return nil, errors.New("engine: no workflow")
	}
	if opts.Model == nil {
		return nil, errors.New("engine: no model")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Durability == "" {
		opts.Durability = p.Workflow.Durability
	}
	d, err := spec.ParseDurability(string(opts.Durability))
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	opts.Durability = d
	if j := journalOf(opts); j != nil {
		opts.RunID = j.Summary.ID
		if err := resumeWorkspace(opts, j); err != nil {
			return nil, err
		}
	}
	arts, seed, keyID, err := handles(&opts)
	if err != nil {
		return nil, err
	}
	r := &Run{
		project: p,
		wf:      p.Workflow,
		limits:  p.Workflow.Limits.WithDefaults(),
		opts:    opts,
		arts:    arts,
		log:     opts.Logger,
		now:     opts.Now,
		ledger:  supply.NewLedger(),
		tokens:  sharedTokens,
		box:     newToolbox(opts.Trusted, runSecrets(opts.Secrets)),
		strict:  &strictness{on: opts.Strict || p.Workflow.Strict},
	}
	for _, s := range p.Skills {
		// Every skill's, loaded or not: a program may print what another
		// skill's was given (a shared file, a key both use).
		r.box.secrets.Add(skillSecrets(s)...)
	}
	r.acct = newAccount(p.Workflow, r.limits)
	r.cat = newCatalog(p, opts.Reload)
	r.box.workflow, r.box.wrap = p.Workflow, refusedOnce(opts.wrap, opts.Logger)
	r.box.mcp = r.box.newMCP(mcptool.Options{Trusted: opts.Trusted, Idle: opts.MCPIdle, Spool: workSpool{r.arts}, Logger: opts.Logger, Mask: r.box.secrets.String,
		Unavailable: r.strict.mcpUnavailable(r.box.secrets.String), Workspace: r.box.workDir})
	r.seed, r.handleKey = seed, keyID
	r.ID = opts.RunID
	if r.ID == "" {
		// From crypto/rand, not the handle source: a resumed run keeps its
		// id and must draw the same handles as the first.
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("engine: run id: %w", err)
		}
		r.ID = opts.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
	}
	r.ev = emitter{runID: r.ID, now: r.now}
	mode, err := approval.ParseMode(string(opts.Approve))
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if opts.Key.IsZero() && (opts.RunsDir != "" || opts.Resume != nil) {
		if r.opts.Key, err = runrecord.UserKey(); err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
	}
	r.appr = approval.New(approval.Config{Mode: mode, Timeout: opts.ApprovalTimeout, Default: p.Workflow.Approve, Now: r.now, Emit: r.ev.emit,
		Log: opts.Logger, Key: r.opts.Key})
	return r, nil
}

// Handle returns the artifact handle of an enabled skill's instructions,
// spooling them if they are not yet: the scripted model's `handle`
// template function calls it. A skill loaded inline has no handle the
// readers would take (they are not offered for it): asking for one is an
// error that says how to get one.
func (r *Run) Handle(skillID string) (string, error) {
	s, ok := r.cat.get(skillID)
	if !ok {
		return "", fmt.Errorf("skill %q is not enabled", skillID)
	}
	if resolveChannel(s, r.wf.Channel) == spec.ChannelInline {
		why := "its channel is inline"
		if s.Channel != spec.ChannelInline && r.wf.Channel != spec.ChannelInline {
			why = fmt.Sprintf("channel auto puts instructions of at most %d tokens inline", spec.AutoInlineTokens)
		}
		return "", fmt.Errorf("skill %q has no handle: %s; set channel: handle in the skill to read it through a handle", skillID, why)
	}
	return r.arts.Spool(s.ID, s.Revision(), []byte(s.Instructions), s.Dir, s.Resources)
}

// ErrInterrupted is wrapped by Execute's error when the caller's context
// ended the run (a signal, a timeout): the record says "interrupted" and
// the run can be resumed.
var ErrInterrupted = errors.New("interrupted")

// ErrChanged is returned when a resume finds the workflow, the script or
// a manifest changed since the run started (Options.Force resumes anyway).
var ErrChanged = errors.New("resume refused: the run's files changed since it started")

// Execute runs the workflow with input (empty: the workflow's input) and
// returns the final answer. The run record is complete whatever happens.
func (r *Run) Execute(ctx context.Context, input string) (res *Result, err error) {
	if input == "" {
		input = r.wf.Input
	}
	res = &Result{RunID: r.ID}
	digests, err := r.digests()
	if err != nil {
		return res, err
	}
	var lock *journal.Locked
	if j := r.opts.Resume; j != nil {
		defer j.Close() // a no-op once the record took the lock over
		if input, err = r.resuming(j, input, digests); err != nil {
			return res, err
		}
		lock = j.lock
	} else if j := r.journal(); j != nil {
		// A session's next turn: its record goes on, whatever changed.
		defer j.Close()
		r.opts.RunsDir, lock = filepath.Dir(j.Dir), j.lock
	}
	if r.opts.session != nil {
		r.opts.session.digests = digests
	}
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if r.opts.RunsDir != "" {
		rec, err := runrecord.Create(r.opts.RunsDir, r.ID, r.project, runrecord.WriteOptions{Lock: lock, Redact: r.opts.Redact,
			FlushDelay: r.opts.flushDelay, OnError: func(err error) { stop(fmt.Errorf("run record: %w", err)) }})
		if err != nil {
			return res, err
		}
		r.rec = rec
		res.Dir = rec.Dir()
		defer func() {
			if cerr := rec.Close(); err == nil && cerr != nil {
				err = cerr
			}
		}()
	}
	closeWorkspace, err := r.openWorkspace(res.Dir)
	defer closeWorkspace()
	if err != nil {
		return res, err
	}
	r.box.describeSandboxes(r.project.Skills, r.log)
	if res.Dir != "" || r.opts.Workspace != "" || r.wf.Workspace != "" {
		res.Workspace = r.box.workDir() // not a temporary one, gone when Execute returns
	}
	r.ev.sink = event.Multi{r.opts.Sink, r.rec.Sink()}
	sum := runrecord.Summary{ID: r.ID, Workflow: absPath(r.wf.File), Status: runrecord.Running, Started: r.now(), PID: os.Getpid(),
		Input: input, Seed: r.seed, HandleKey: r.handleKey, Meta: r.opts.Meta, Digests: digests, Workspace: r.box.workDir()}
	sum.Seal = runrecord.SealSummary(r.opts.Key, sum)
	if j := r.journal(); j != nil {
		sum.Started, sum.Resumed = j.Summary.Started, j.Summary.Resumed
		if r.opts.Resume != nil {
			sum.Resumed++
		}
		// Replayed steps are not billed again; the first run's count
		// stays, and its budgets go on from it (a session's, turn after
		// turn).
		if n, held := r.acct.restore(j.Summary, j.Dir); n > 0 {
			r.log.Warn().Int("calls", n).Int("input_tokens", held.InputTokens).Int("output_tokens", held.OutputTokens).
				Msg("model calls were in flight when the run stopped: what they reserved counts against the token budgets")
		}
		r.acct.summarize(&sum)
	}
	if j := r.opts.Resume; j != nil {
		// Still pending until the replay reaches them and asks again.
		sum.Pending = j.Summary.Pending
	}
	if err := r.rec.WriteSummary(sum); err != nil {
		return res, err
	}
	if err := r.watchApprovals(runCtx, stop, &sum); err != nil {
		return res, err
	}
	defer r.appr.Close()
	started := event.Event{Type: event.RunStarted, Text: r.wf.Name}
	if r.journal() != nil {
		// What the run used before: a view adds this run's calls to it.
		u, cost := r.acct.total()
		started.Usage, started.Cost = &u, cost
	}
	r.ev.emit(started)
	for _, s := range r.project.Skipped {
		r.ev.emit(event.Event{Type: event.SkillSkipped, Skill: s.ID, At: s.Pos.String(), Reason: s.Reason})
	}
	defer r.box.mcp.Close() // every MCP server ends with the run
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error: %v", p)
		}
		err = r.finish(ctx, res, &sum, err)
	}()
	if obs := r.opts.Observer; obs != nil {
		var end func(string, error)
		runCtx, end = obs.Run(runCtx, r.ID, r.wf.Name)
		defer func() { end(res.Answer, err) }()
	}
	r.strict.start(stop)
	if r.opts.session == nil {
		// A session turn checks in sessionTurn (Q23).
		if err := r.strict.skipped(r.project.Skipped); err != nil {
			return res, err
		}
	}
	if r.wf.Host == nil {
		res.Answer, err = r.pipeline(runCtx, input)
	} else {
		res.Answer, err = r.conversation(runCtx, input)
	}
	if cause := context.Cause(runCtx); err != nil && ctx.Err() == nil && errors.Is(cause, approval.ErrWaiting) {
		// The run stopped itself for an approval: that is what it ended
		// with, whatever its tasks made of the stop.
		err = cause
	}
	return res, r.strict.result(err)
}

// resuming checks a resumed run against the record it goes on from: the
// record folder is the replay's, the input is the first run's unless a
// new one is given, and — unless --force — the record must say, sealed
// by fsd for this run, what the run was made from, and none of it may
// have changed.
//
// R4: a resume refuses a run whose files differ from its digests.
func (r *Run) resuming(j *Replay, input string, digests journal.Digests) (string, error) {
	r.opts.RunsDir = filepath.Dir(j.Dir)
	if input == "" || input == r.wf.Input {
		input = j.Summary.Input
	}
	if err := j.Sealed(r.opts.Key); err != nil {
		if !r.opts.Force {
			return input, err
		}
		r.log.Warn().Err(err).Msg("resuming a run whose record is not sealed (--force)")
	}
	if diff := journal.Diff(j.Summary.Digests, digests); len(diff) > 0 {
		if !r.opts.Force {
			return input, fmt.Errorf("%w: %s; resume with --force to run it as it is now", ErrChanged, strings.Join(diff, ", "))
		}
		r.log.Warn().Strs("changed", diff).Msg("resuming a run whose files changed (--force)")
	}
	for _, rep := range j.Repaired {
		r.log.Warn().Str("file", rep).Msg("repaired the run record's torn last line")
	}
	return input, nil
}

// absPath is path made absolute ("" stays ""): run.json names the
// workflow so that a resume finds it from any folder.
func absPath(path string) string {
	if path == "" {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// finish ends the run whatever err it ends with: run.finished and
// run.json say how (finished, failed, interrupted, or waiting when it
// stopped for an approval nobody here could give), with the usage and
// the calls a stopped run leaves waiting; a record cut short fails it.
//
// R1: the record is complete however the run ends.
func (r *Run) finish(ctx context.Context, res *Result, sum *runrecord.Summary, err error) error {
	sum.Status, sum.Finished = runrecord.Finished, r.now()
	switch werr := r.rec.Err(); {
	case werr != nil:
		// Whatever the run did, its record is cut: not a success.
		err = fmt.Errorf("the run record is incomplete: %w", werr)
	case err != nil && ctx.Err() != nil:
		err = fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(ctx))
	}
	fin := event.Event{Type: event.RunFinished, Answer: res.Answer}
	sum.Answer = clipRecord(res.Answer)
	if err != nil {
		fin.Err = err.Error()
		sum.Status, sum.Error, sum.Answer = runrecord.Failed, clipRecord(err.Error()), ""
		switch {
		case errors.Is(err, ErrInterrupted):
			sum.Status = runrecord.Interrupted
		case errors.Is(err, approval.ErrWaiting):
			sum.Status, sum.Error = runrecord.Waiting, ""
		}
	}
	r.acct.summarize(sum)
	u, cost := r.acct.total()
	fin.Usage, fin.Cost = &u, cost
	fin.Status = string(sum.Status) // interrupted is not failed
	r.ev.emit(fin)
	sum.Pending = nil
	if err != nil {
		sum.Pending = r.appr.Pending() // calls a stopped run leaves waiting
	}
	if werr := r.rec.WriteSummary(*sum); err == nil && werr != nil {
		err = werr
	}
	if werr := r.endTurn(sum.Status); err == nil && werr != nil {
		err = werr
	}
	if werr := r.rec.Err(); err == nil && werr != nil {
		err = fmt.Errorf("the run record is incomplete: %w", werr)
	}
	return err
}

// maxRecordText bounds the answers and results kept in run.json and
// board.json (and the text events): the transcripts keep them whole.
const maxRecordText = 64 << 10

// clipRecord cuts text longer than maxRecordText, on a character
// boundary, and says how long it was.
func clipRecord(s string) string {
	if len(s) <= maxRecordText {
		return s
	}
	cut := maxRecordText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… [%d bytes in all; the transcript has the whole text]", len(s))
}

// workSpool keeps what MCP tools return beyond text (images, audio,
// embedded resources) as work of the run (H4): readable by handle whatever
// is loaded later, like a large result.
type workSpool struct{ arts *artifact.Store }

func (w workSpool) Keep(_, name string, data []byte) (string, error) {
	return w.arts.KeepResult("", name, data, "")
}
