package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// ErrSessionBusy is wrapped when another process writes the session: one
// writer at a time, and the error names its pid.
var ErrSessionBusy = errors.New("session is busy")

// ErrSessionInterrupted is wrapped when a session's last turn was
// interrupted: it must be resumed (ResumeSession, fsd resume) or
// abandoned (AbandonTurn) before a new turn starts.
var ErrSessionInterrupted = errors.New("the session's last turn was interrupted")

// LoadedSkill is a skill loaded in a session, at its version.
type LoadedSkill struct {
	ID, Version string
}

// Session is a conversation kept across turns: one run record under the
// sessions folder whose journal grows turn by turn. Each turn is a Run
// that first restates the turns before it from the journal — no model
// call or program is repeated — so the loaded skills, their per-load
// state, the store, artifacts and handles, the board and the usage are
// what the last turn left; then it adds the user's message and goes on
// live. A Session holds the session's writer lock from OpenSession to
// Close; its turns run one at a time.
type Session struct {
	// Name names the session and its run.
	Name string
	dir  string
	lock *journal.Locked
	// resume: the next Start resumes the interrupted last turn.
	resume bool

	mu   sync.Mutex
	file runrecord.Session
}

// OpenSession opens the session name under sessionsDir (created on first
// use) and takes its writer lock: an error wrapping ErrSessionBusy names
// the holder's pid; ErrSessionInterrupted when the last turn must be
// resumed or abandoned first.
//
// Q6: no new turn after an interrupted one until it is resumed or
// abandoned.
func OpenSession(sessionsDir, name string) (*Session, error) {
	s, err := openSession(sessionsDir, name)
	if err != nil {
		return nil, err
	}
	if s.interrupted() {
		s.Close()
		return nil, fmt.Errorf("%w: session %s; resume it (fsd resume %s) or give it up (fsd sessions abandon %s)", ErrSessionInterrupted, name, name, name)
	}
	return s, nil
}

// ResumeSession opens a session whose last turn was interrupted: its
// Start builds that turn again from the journal, as a resumed run is, and
// Execute goes on with it (its message is the one the turn started with).
func ResumeSession(sessionsDir, name string) (*Session, error) {
	s, err := openSession(sessionsDir, name)
	if err != nil {
		return nil, err
	}
	if !s.interrupted() {
		s.Close()
		return nil, fmt.Errorf("%w: session %s has no interrupted turn", ErrNotResumable, name)
	}
	s.resume = true
	return s, nil
}

// AbandonTurn gives up a session's interrupted last turn: the turn stays in
// the transcript as far as its journal goes, its calls without a result
// read that they were not run, and the next turn goes on after it.
func AbandonTurn(sessionsDir, name string) error {
	s, err := openSession(sessionsDir, name)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Abandon()
}

// Interrupted reports whether the session's last turn was interrupted
// (its context cancelled, its process stopped): Abandon gives it up, a
// Session from ResumeSession resumes it.
func (s *Session) Interrupted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.interrupted()
}

// Resume makes the next Start resume the interrupted last turn, in the
// process that holds the session, as ResumeSession does for a new one.
func (s *Session) Resume() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.interrupted() {
		return fmt.Errorf("%w: session %s has no interrupted turn", ErrNotResumable, s.Name)
	}
	s.resume = true
	return nil
}

// Abandon gives up the interrupted last turn, as AbandonTurn does, in
// the process that holds the session (a chat whose turn was cancelled).
func (s *Session) Abandon() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := s.Name
	if !s.interrupted() {
		return fmt.Errorf("session %s has no interrupted turn to abandon", name)
	}
	t := s.openTurn()
	if t == nil {
		// It died before it was recorded: nothing of it is in the
		// transcript.
		sum, _ := runrecord.ReadSummary(s.dir)
		s.file.Turns = append(s.file.Turns, runrecord.Turn{Input: sum.Input, Started: sum.Started, Entry: -1})
		t = &s.file.Turns[len(s.file.Turns)-1]
	}
	t.Status = runrecord.TurnAbandoned
	s.resume = false
	return runrecord.WriteSession(s.dir, s.file)
}

// openSession takes the session's lock and reads session.json.
//
// Q4: one writer; the one refused learns the holder's pid.
func openSession(sessionsDir, name string) (*Session, error) {
	if err := runrecord.CheckSessionName(name); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Join(sessionsDir, name))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("session %s: %w", name, err)
	}
	path := filepath.Join(dir, runrecord.SessionLockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", name, err)
	}
	f.Close()
	lock, err := journal.TryLock(path)
	if errors.Is(err, journal.ErrLocked) {
		pid, _ := os.ReadFile(path)
		return nil, fmt.Errorf("%w: session %s is in a turn in another fsd (pid %s)", ErrSessionBusy, name, strings.TrimSpace(string(pid)))
	}
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", name, err)
	}
	// Whoever finds it locked reads who holds it.
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		lock.Unlock()
		return nil, fmt.Errorf("session %s: %w", name, err)
	}
	s := &Session{Name: name, dir: dir, lock: lock}
	if s.file, err = runrecord.ReadSession(dir); err != nil {
		lock.Unlock()
		return nil, fmt.Errorf("session %s: %w", name, err)
	}
	return s, nil
}

// interrupted reports whether the last turn neither ended nor was
// abandoned: run.json says how the last turn's run ended.
func (s *Session) interrupted() bool {
	sum, err := runrecord.ReadSummary(s.dir)
	if err != nil {
		return false // no turn ran yet
	}
	if sum.Status == runrecord.Finished || sum.Status == runrecord.Failed {
		return false
	}
	n := len(s.file.Turns)
	return n == 0 || s.file.Turns[n-1].Status != runrecord.TurnAbandoned
}

// checkRecord refuses a session whose record does not hold the turns
// session.json lists: each turn's place in the host's transcript is in
// the journal (a finished turn's user message at least), in order, and a
// journal with entries has a turn that placed them. A journal cut,
// emptied or gone, a run.json gone (no journal is read then) or a
// session.json gone or edited would otherwise go on quietly: the earlier
// turns restated from nothing while session.json still counts them, the
// next turn placed over the first, or a negative place panicking.
func (s *Session) checkRecord(j *Replay) error {
	var ents, msgs int
	if h := j.gen(transcriptName("", 1)); h != nil {
		ents, msgs = len(h.ents), len(h.msgs)
	}
	placed, entry, message := false, 0, 0
	for i, t := range s.file.Turns {
		if t.Entry == -1 && t.Status == runrecord.TurnAbandoned {
			continue // it died before anything of it was recorded
		}
		bad := ""
		switch {
		case t.Entry < 0 || t.Message < 0:
			bad = fmt.Sprintf("starts at entry %d, message %d", t.Entry, t.Message)
		case t.Entry < entry || t.Message < message:
			bad = fmt.Sprintf("starts at entry %d, message %d, before the turn ahead of it", t.Entry, t.Message)
		case t.Entry > ents || t.Message > msgs,
			t.Status == runrecord.TurnFinished && (t.Entry == ents || t.Message == msgs):
			bad = fmt.Sprintf("starts at entry %d, message %d, past the host's journal (%d entries, %d messages)", t.Entry, t.Message, ents, msgs)
		case !placed && (t.Entry != 0 || t.Message != 0):
			bad = fmt.Sprintf("is the first in the journal but starts at entry %d, message %d", t.Entry, t.Message)
		}
		if bad != "" {
			return fmt.Errorf("session %s: its record does not hold the turns %s lists: turn %d %s", s.Name, runrecord.SessionFile, i+1, bad)
		}
		placed, entry, message = true, t.Entry, t.Message
	}
	if !placed && ents > 0 {
		return fmt.Errorf("session %s: its journal holds %d entries but %s lists no turn that placed them", s.Name, ents, runrecord.SessionFile)
	}
	return nil
}

// openTurn is the last turn when it has not ended, else nil.
func (s *Session) openTurn() *runrecord.Turn {
	if n := len(s.file.Turns); n > 0 && s.file.Turns[n-1].Status == "" {
		return &s.file.Turns[n-1]
	}
	return nil
}

// Dir is the session's folder: its run record.
func (s *Session) Dir() string { return s.dir }

// Turns is how many turns the session has recorded.
func (s *Session) Turns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.file.Turns)
}

// Start builds the session's next turn as a Run (approvals, Pending,
// Handle, Answer as for any run); Execute(ctx, message) runs it. opts'
// RunsDir, RunID, Resume and History are the session's own.
func (s *Session) Start(p *spec.Project, opts Options) (*Run, error) {
	if s.lock == nil {
		return nil, errors.New("engine: the session is closed")
	}
	if p == nil || p.Workflow == nil {
		return nil, errors.New("engine: no workflow")
	}
	if p.Workflow.Host == nil {
		return nil, fmt.Errorf("session %s: workflow %s has no host: a session is a conversation with a workflow's host", s.Name, p.Workflow.Name)
	}
	if !s.resume && s.interrupted() {
		return nil, fmt.Errorf("%w: session %s", ErrSessionInterrupted, s.Name)
	}
	st := &turnOf{s: s}
	var j *Replay
	if _, err := os.Stat(filepath.Join(s.dir, runrecord.RunFile)); err == nil {
		var err error
		if j, err = LoadReplay(s.dir, sessionLoad()); err != nil {
			return nil, fmt.Errorf("session %s: %w", s.Name, err)
		}
	}
	if err := s.checkRecord(j); err != nil {
		j.Close()
		return nil, err
	}
	opts.RunsDir, opts.RunID, opts.History, opts.Resume = filepath.Dir(s.dir), s.Name, nil, nil
	st.journal = j
	if s.resume {
		if j == nil {
			return nil, fmt.Errorf("%w: session %s has no record", ErrNotResumable, s.Name)
		}
		opts.Resume = j
	}
	opts.session = st
	r, err := New(p, opts)
	if err != nil {
		j.Close()
		return nil, err
	}
	return r, nil
}

// Turn is Start then Execute.
func (s *Session) Turn(ctx context.Context, p *spec.Project, opts Options, message string) (*Result, error) {
	r, err := s.Start(p, opts)
	if err != nil {
		return nil, err
	}
	return r.Execute(ctx, message)
}

// Loaded lists the loaded skills, least recently used first, as the last
// turn left them.
func (s *Session) Loaded() []LoadedSkill {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.file.Turns)
	if n == 0 {
		return nil
	}
	var out []LoadedSkill
	for _, l := range s.file.Turns[n-1].Loaded {
		out = append(out, LoadedSkill{ID: l.ID, Version: l.Version})
	}
	return out
}

// NextRequest is the host's next request for message, without calling the
// model or writing the record (`/context`).
func (s *Session) NextRequest(p *spec.Project, opts Options, message string) (*model.Request, error) {
	if s.resume || s.interrupted() {
		return nil, fmt.Errorf("%w: session %s", ErrSessionInterrupted, s.Name)
	}
	opts.Sink, opts.Observer = nil, nil
	r, err := s.Start(p, opts)
	if err != nil {
		return nil, err
	}
	j := r.journal()
	defer j.Close()
	r.rec = nil // the record is only read
	r.opts.session.dryRun = true
	g, h, err := r.newHost(message)
	if err != nil {
		return nil, err
	}
	if err := h.board.seed(); err != nil {
		return nil, err
	}
	if _, err := r.sessionTurn(context.Background(), g, h, message); err != nil {
		return nil, err
	}
	return g.request(0), nil
}

// Close releases the session's lock.
func (s *Session) Close() error {
	if s == nil || s.lock == nil {
		return nil
	}
	err := s.lock.Unlock()
	s.lock = nil
	return err
}

// sessionLoad loads a session's journal: its holder has the session's
// lock, and a finished run is one the next turn goes on from.
func sessionLoad() LoadOption { return func(o *loadOptions) { o.session = true } }
