package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
)

// Starter builds the next turn of an open session as a run whose events
// go to sink (and to its record); finish is called with Execute's error
// once the turn ends and returns the turn's error. cmd/fsd gives the
// model, trust and the rest of a run's options, as fsd run --session does.
type Starter func(s *engine.Session, sink event.Sink) (run *engine.Run, finish func(error) error, err error)

// Config is what a Server serves.
type Config struct {
	// SessionsDir holds the sessions, one run record each.
	SessionsDir string
	// Start builds a session's turn.
	Start Starter
	// Workflow describes the workflow (Info).
	Workflow WorkflowInfo
	// Logger gets a line for each turn that ends, resumes or fails.
	Logger zerolog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// ErrClosed: the server is shutting down and starts no turn.
var ErrClosed = errors.New("the server is shutting down")

// ErrInterrupted is wrapped when a session's last turn was interrupted:
// it is resumed (Resume) or given up (Abandon) before a new one starts.
var ErrInterrupted = errors.New("the session's last turn was interrupted")

// Server is the Backend over engine sessions under a sessions folder.
// Each turn holds its session's writer lock while it runs, so fsd run
// --session and fsd serve never write one session at once.
type Server struct {
	cfg Config

	mu       sync.Mutex
	live     map[string]*turn // sessions with a turn running
	closed   bool
	turns    sync.WaitGroup
	lastTurn map[string]*turn // the last turn each session ran here, for its events
}

// turn is a turn running in this process and the events it emitted.
type turn struct {
	session string
	n       int
	run     *engine.Run
	cancel  context.CancelFunc
	done    chan struct{}
	// base is the number of events the record held before the turn: its
	// first event is base+1, as it is line base+1 of events.jsonl.
	base    int64
	events  []Event
	changed chan struct{} // closed and replaced on every event and at the end
	err     error
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Server{cfg: cfg, live: map[string]*turn{}, lastTurn: map[string]*turn{}}
}

func (s *Server) dir(session string) string { return filepath.Join(s.cfg.SessionsDir, session) }

// exists reports whether session has a record or a turn here.
func (s *Server) exists(session string) bool {
	if runrecord.CheckSessionName(session) != nil {
		return false
	}
	if s.running(session) != nil {
		return true
	}
	return runrecord.IsSession(s.dir(session))
}

func (s *Server) running(session string) *turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[session]
}

// Send starts the next turn of session with message.
func (s *Server) Send(ctx context.Context, session, message string) (TurnInfo, error) {
	if err := runrecord.CheckSessionName(session); err != nil {
		return TurnInfo{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if message == "" {
		return TurnInfo{}, fmt.Errorf("%w: the message is empty", ErrInvalid)
	}
	return s.start(session, message, false)
}

// Resume goes on with the session's interrupted last turn (completed
// model calls and commands are not repeated).
func (s *Server) Resume(session string) (TurnInfo, error) {
	if !s.exists(session) {
		return TurnInfo{}, fmt.Errorf("%w: session %s", ErrNotFound, session)
	}
	return s.start(session, "", true)
}

// Abandon gives up the session's interrupted last turn: the next message
// starts a new one after it.
func (s *Server) Abandon(session string) error {
	if !s.exists(session) {
		return fmt.Errorf("%w: session %s", ErrNotFound, session)
	}
	if s.running(session) != nil {
		return ErrBusy
	}
	err := engine.AbandonTurn(s.cfg.SessionsDir, session)
	if errors.Is(err, engine.ErrSessionBusy) {
		return fmt.Errorf("%w: %v", ErrBusy, err)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// start opens the session, builds its turn and runs it in the
// background: the turn outlives the request that started it.
//
// Y4: one turn per session.
func (s *Server) start(session, message string, resume bool) (TurnInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return TurnInfo{}, ErrClosed
	}
	if s.live[session] != nil {
		return TurnInfo{}, ErrBusy
	}
	open := engine.OpenSession
	if resume {
		open = engine.ResumeSession
	}
	sess, err := open(s.cfg.SessionsDir, session)
	switch {
	case errors.Is(err, engine.ErrSessionBusy):
		return TurnInfo{}, fmt.Errorf("%w: %v", ErrBusy, err)
	case errors.Is(err, engine.ErrSessionInterrupted):
		return TurnInfo{}, fmt.Errorf("%w: resume it (POST /sessions/%s/resume) or give it up (POST /sessions/%s/abandon)", ErrInterrupted, session, session)
	case errors.Is(err, engine.ErrNotResumable):
		return TurnInfo{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	case err != nil:
		return TurnInfo{}, err
	}
	base, err := countLines(filepath.Join(sess.Dir(), runrecord.EventsFile))
	if err != nil {
		sess.Close()
		return TurnInfo{}, err
	}
	n := sess.Turns() + 1
	if resume {
		n--
		if message, err = turnInput(sess.Dir()); err != nil {
			sess.Close()
			return TurnInfo{}, err
		}
	}
	t := &turn{session: session, n: n, base: base, done: make(chan struct{}), changed: make(chan struct{})}
	run, finish, err := s.cfg.Start(sess, event.SinkFunc(t.emit(&s.mu)))
	if err != nil {
		sess.Close()
		return TurnInfo{}, err
	}
	t.run = run
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	s.live[session], s.lastTurn[session] = t, t
	s.turns.Add(1)
	go func() {
		defer s.turns.Done()
		_, err := run.Execute(ctx, message)
		err = finish(err)
		sess.Close()
		cancel()
		l := s.cfg.Logger.Info()
		if err != nil {
			l = s.cfg.Logger.Warn().Err(err)
		}
		l.Str("session", session).Int("turn", n).Msg("turn ended")
		s.mu.Lock()
		t.err = err
		delete(s.live, session)
		// Wait's record of the turn; its events are the record's now,
		// and only streams still sending them keep them in memory.
		s.lastTurn[session] = &turn{done: t.done, err: err}
		close(t.done)
		close(t.changed)
		t.changed = make(chan struct{})
		s.mu.Unlock()
	}()
	return TurnInfo{Session: session, Turn: n, RunID: session}, nil
}

// emit numbers an event of the turn: the engine hands its sinks the
// events in the order it writes them to events.jsonl.
func (t *turn) emit(mu *sync.Mutex) func(event.Event) {
	return func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		t.events = append(t.events, Event{ID: t.base + int64(len(t.events)) + 1, Turn: t.n, Event: e})
		close(t.changed)
		t.changed = make(chan struct{})
	}
}

// turnInput is the message the session's last turn started with.
func turnInput(dir string) (string, error) {
	f, err := runrecord.ReadSession(dir)
	if err != nil {
		return "", err
	}
	if n := len(f.Turns); n > 0 {
		return f.Turns[n-1].Input, nil
	}
	sum, err := runrecord.ReadSummary(dir)
	return sum.Input, err
}

// Pending lists the calls the session's running turn waits for.
func (s *Server) Pending(session string) ([]Approval, error) {
	if !s.exists(session) {
		return nil, fmt.Errorf("%w: session %s", ErrNotFound, session)
	}
	out := []Approval{}
	t := s.running(session)
	if t == nil {
		return out, nil
	}
	for _, p := range t.run.Pending() {
		out = append(out, Approval{CallID: p.Call, Tool: p.Tool, Agent: p.Agent, Args: p.Args})
	}
	return out, nil
}

// Answer answers a pending call of the session's running turn.
func (s *Server) Answer(session, callID string, a Answer) error {
	decision := map[string]string{Approve: runrecord.Approved, Edit: runrecord.Edited, Reject: runrecord.Rejected}[a.Decision]
	if decision == "" {
		return fmt.Errorf("%w: decision %q: want approve, edit or reject", ErrInvalid, a.Decision)
	}
	if a.Decision == Edit && !isObject(a.Args) {
		return fmt.Errorf("%w: an edit needs the call's new arguments (args), a JSON object such as {\"env\": \"staging\"}", ErrInvalid)
	}
	t := s.running(session)
	if t == nil {
		return fmt.Errorf("%w: session %s has no turn running", ErrNotFound, session)
	}
	found := false
	for _, p := range t.run.Pending() {
		found = found || p.Call == callID
	}
	if !found {
		return fmt.Errorf("%w: no call %s waits for approval in session %s", ErrNotFound, callID, session)
	}
	err := t.run.Answer(runrecord.Answer{Call: callID, Decision: decision, Args: a.Args, Reason: a.Reason, By: "fsd serve", Time: s.cfg.Now()})
	if errors.Is(err, runrecord.ErrAnswered) {
		return fmt.Errorf("%w: call %s was answered already", ErrNotFound, callID)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// isObject reports whether raw is a JSON object: a tool's arguments are
// one, and an edit that is not would only fail the call.
func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// Cancel stops the session's running turn; it stays resumable.
func (s *Server) Cancel(session string) error {
	t := s.running(session)
	if t == nil {
		return fmt.Errorf("%w: session %s has no turn running", ErrNotFound, session)
	}
	t.cancel()
	return nil
}

// Wait blocks until the session's running turn, if any, ends or ctx is
// done, and returns the turn's error.
func (s *Server) Wait(ctx context.Context, session string) error {
	s.mu.Lock()
	t := s.live[session]
	if t == nil {
		t = s.lastTurn[session]
	}
	s.mu.Unlock()
	if t == nil {
		return nil
	}
	select {
	case <-t.done:
		return t.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Info describes the workflow.
func (s *Server) Info() WorkflowInfo { return s.cfg.Workflow }

// Close stops taking turns and cancels the running ones, which the
// engine leaves interrupted and resumable (RecoverAll goes on with them
// when the server starts again); it returns when they have stopped or
// ctx is done.
//
// Y7: a shutdown leaves turns resumable.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for _, t := range s.live {
		t.cancel()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.turns.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Recovered is what RecoverAll did with one session found interrupted.
type Recovered struct {
	Session string
	Turn    int
	// Err says why the turn was not resumed; nil: it resumes.
	Err error
}

// RecoverAll resumes the interrupted last turn of every session under
// the sessions folder — a server killed mid-turn goes on where it
// stopped: completed calls are not repeated, a call in doubt is retried
// or failed as its tool's on-interrupt says, and the approvals it waited
// for are asked again (answers already in the record stand).
//
// Y3, Y7: what was interrupted here resumes.
func (s *Server) RecoverAll() []Recovered {
	names, err := runrecord.ListSessions(s.cfg.SessionsDir)
	if err != nil {
		return []Recovered{{Err: err}}
	}
	var out []Recovered
	for _, name := range names {
		sum, err := runrecord.ReadSummary(s.dir(name))
		if err != nil || runrecord.Current(s.dir(name), sum) != runrecord.Interrupted {
			continue
		}
		f, _ := runrecord.ReadSession(s.dir(name))
		if n := len(f.Turns); n > 0 && f.Turns[n-1].Status == runrecord.TurnAbandoned {
			continue
		}
		ti, err := s.Resume(name)
		if ti.Turn == 0 {
			ti.Turn = len(f.Turns)
		}
		out = append(out, Recovered{Session: name, Turn: ti.Turn, Err: err})
	}
	return out
}

// SessionInfo describes a session for a listing.
type SessionInfo struct {
	Name    string
	Status  string
	Turns   int
	Started time.Time
	Pending int
}

// Session describes one session: running or waiting when a turn runs
// here, else its record's status (finished, failed, interrupted), new
// before any turn.
func (s *Server) Session(name string) (SessionInfo, error) {
	if !s.exists(name) {
		return SessionInfo{}, fmt.Errorf("%w: session %s", ErrNotFound, name)
	}
	dir := s.dir(name)
	f, err := runrecord.ReadSession(dir)
	info := SessionInfo{Name: name, Turns: len(f.Turns), Status: "new"}
	if err != nil && s.running(name) == nil {
		// Its turns cannot be read: say so rather than "finished", 0 turns.
		info.Status = "damaged"
		return info, nil
	}
	if len(f.Turns) > 0 {
		info.Started = f.Turns[0].Started
	}
	if t := s.running(name); t != nil {
		info.Status = string(runrecord.Running)
		if info.Pending = len(t.run.Pending()); info.Pending > 0 {
			info.Status = string(runrecord.Waiting)
		}
		info.Turns = max(info.Turns, t.n)
		return info, nil
	}
	if sum, err := runrecord.ReadSummary(dir); err == nil {
		info.Status = string(runrecord.Current(dir, sum))
		if n := len(f.Turns); n > 0 && f.Turns[n-1].Status == runrecord.TurnAbandoned {
			info.Status = string(runrecord.TurnAbandoned)
		}
	}
	return info, nil
}

// Sessions lists the sessions, newest first.
func (s *Server) Sessions() ([]SessionInfo, error) {
	names, err := runrecord.ListSessions(s.cfg.SessionsDir)
	if err != nil {
		return nil, err
	}
	out := []SessionInfo{}
	for _, n := range names {
		if info, err := s.Session(n); err == nil {
			out = append(out, info)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.After(out[j].Started) })
	return out, nil
}

// countLines counts the whole lines of a JSONL file (a torn last line,
// which the writer repairs before appending, is not one).
func countLines(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var n int64
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n, nil
}

var _ Backend = (*Server)(nil)
