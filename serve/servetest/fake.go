package servetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/serve"
)

// Fake is a serve.Backend in memory. Each Send runs Script in a goroutine
// between a run.started and a run.finished event; the zero Fake answers
// every message with "echo: MESSAGE".
type Fake struct {
	// Workflow is what Info returns.
	Workflow serve.WorkflowInfo
	// Script runs one turn: it emits events and asks for approvals
	// through t, and returns the turn's answer (run.finished's Answer) or
	// an error (run.finished with Status failed, or cancelled when ctx
	// was cancelled).
	Script func(ctx context.Context, t *Turn, message string) (string, error)

	mu       sync.Mutex
	sessions map[string]*session
}

type session struct {
	events  []serve.Event
	turns   int
	running *Turn
	changed chan struct{} // closed and replaced on every event or turn end
}

// Turn is a running turn of a Fake, as its Script sees it.
type Turn struct {
	f       *Fake
	s       *session
	n       int
	run     string
	cancel  context.CancelFunc
	pending map[string]*ask
	order   []string
	done    chan struct{}
}

type ask struct {
	a      serve.Approval
	answer chan serve.Answer
}

// Emit records e as the turn's next event (Run and Time are filled in when
// empty).
func (t *Turn) Emit(e event.Event) {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.f.emitLocked(t.s, t, e)
}

// Ask makes a call wait for an approval: approval.requested is emitted,
// Pending lists it until Answer answers it (approval.answered is emitted),
// and Ask returns the answer, or ctx's error.
func (t *Turn) Ask(ctx context.Context, a serve.Approval) (serve.Answer, error) {
	p := &ask{a: a, answer: make(chan serve.Answer, 1)}
	t.f.mu.Lock()
	t.pending[a.CallID] = p
	t.order = append(t.order, a.CallID)
	t.f.emitLocked(t.s, t, event.Event{Type: event.ApprovalRequested, Agent: a.Agent, Tool: a.Tool, CallID: a.CallID, Approval: a.CallID, Args: a.Args})
	t.f.mu.Unlock()
	select {
	case ans := <-p.answer:
		return ans, nil
	case <-ctx.Done():
		t.f.mu.Lock()
		t.drop(a.CallID)
		t.f.mu.Unlock()
		return serve.Answer{}, ctx.Err()
	}
}

func (t *Turn) drop(id string) {
	delete(t.pending, id)
	for i, c := range t.order {
		if c == id {
			t.order = append(t.order[:i:i], t.order[i+1:]...)
			break
		}
	}
}

func (f *Fake) emitLocked(s *session, t *Turn, e event.Event) {
	if e.Run == "" {
		e.Run = t.run
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	s.events = append(s.events, serve.Event{ID: int64(len(s.events) + 1), Turn: t.n, Event: e})
	close(s.changed)
	s.changed = make(chan struct{})
}

func (f *Fake) session(name string, create bool) *session {
	if f.sessions == nil {
		f.sessions = map[string]*session{}
	}
	s := f.sessions[name]
	if s == nil && create {
		s = &session{changed: make(chan struct{})}
		f.sessions[name] = s
	}
	return s
}

// Send starts a turn of session running Script.
func (f *Fake) Send(ctx context.Context, name, message string) (serve.TurnInfo, error) {
	if name == "" {
		return serve.TurnInfo{}, fmt.Errorf("%w: no session name", serve.ErrInvalid)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.session(name, true)
	if s.running != nil {
		return serve.TurnInfo{}, serve.ErrBusy
	}
	s.turns++
	// The turn outlives the request that started it.
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t := &Turn{f: f, s: s, n: s.turns, run: fmt.Sprintf("%s-%d", name, s.turns), cancel: cancel, pending: map[string]*ask{}, done: make(chan struct{})}
	s.running = t
	f.emitLocked(s, t, event.Event{Type: event.RunStarted, Text: message})
	go f.run(tctx, t, message)
	return serve.TurnInfo{Session: name, Turn: t.n, RunID: t.run}, nil
}

func (f *Fake) run(ctx context.Context, t *Turn, message string) {
	script := f.Script
	if script == nil {
		script = func(_ context.Context, t *Turn, m string) (string, error) {
			t.Emit(event.Event{Type: event.Text, Agent: "host", Text: "echo: " + m})
			return "echo: " + m, nil
		}
	}
	answer, err := script(ctx, t, message)
	end := event.Event{Type: event.RunFinished, Status: "finished", Answer: answer}
	switch {
	case ctx.Err() != nil:
		end = event.Event{Type: event.RunFinished, Status: "cancelled", Err: ctx.Err().Error()}
	case err != nil:
		end = event.Event{Type: event.RunFinished, Status: "failed", Err: err.Error()}
	}
	f.mu.Lock()
	f.emitLocked(t.s, t, end)
	t.s.running = nil
	t.cancel()
	close(t.done)
	f.mu.Unlock()
}

// Events streams the session's events after id after, then the live ones
// of the turn running at the call.
func (f *Fake) Events(ctx context.Context, name string, after int64) (<-chan serve.Event, error) {
	f.mu.Lock()
	s := f.session(name, false)
	if s == nil {
		f.mu.Unlock()
		return nil, fmt.Errorf("%w: session %s", serve.ErrNotFound, name)
	}
	var done chan struct{}
	if s.running != nil {
		done = s.running.done
	}
	f.mu.Unlock()
	out := make(chan serve.Event)
	go func() {
		defer close(out)
		next := after
		for {
			f.mu.Lock()
			batch := s.events[min(int(max(next, 0)), len(s.events)):]
			changed := s.changed
			f.mu.Unlock()
			for _, e := range batch {
				select {
				case out <- e:
					next = e.ID
				case <-ctx.Done():
					return
				}
			}
			if len(batch) > 0 {
				continue
			}
			if done == nil {
				return
			}
			select {
			case <-done:
				done = nil // send what the end emitted, then close
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// Recorded streams the session's events after id after of the turns that
// have ended.
func (f *Fake) Recorded(ctx context.Context, name string, after int64) (<-chan serve.Event, error) {
	f.mu.Lock()
	s := f.session(name, false)
	if s == nil {
		f.mu.Unlock()
		return nil, fmt.Errorf("%w: session %s", serve.ErrNotFound, name)
	}
	var ended []serve.Event
	for _, e := range s.events[min(int(max(after, 0)), len(s.events)):] {
		if s.running != nil && e.Turn == s.running.n {
			break
		}
		ended = append(ended, e)
	}
	f.mu.Unlock()
	out := make(chan serve.Event)
	go func() {
		defer close(out)
		for _, e := range ended {
			select {
			case out <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// Pending lists the approvals the session's running turn waits for, in
// the order they were asked.
func (f *Fake) Pending(name string) ([]serve.Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.session(name, false)
	if s == nil {
		return nil, fmt.Errorf("%w: session %s", serve.ErrNotFound, name)
	}
	var out []serve.Approval
	if t := s.running; t != nil {
		for _, id := range t.order {
			out = append(out, t.pending[id].a)
		}
	}
	return out, nil
}

// Answer answers a pending approval and emits approval.answered.
func (f *Fake) Answer(name, callID string, a serve.Answer) error {
	status := map[string]string{serve.Approve: "approved", serve.Edit: "edited", serve.Reject: "rejected"}[a.Decision]
	if status == "" {
		return fmt.Errorf("%w: decision %q: want approve, edit or reject", serve.ErrInvalid, a.Decision)
	}
	if a.Decision == serve.Edit && !json.Valid(a.Args) {
		return fmt.Errorf("%w: an edit needs the call's new arguments as JSON", serve.ErrInvalid)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.session(name, false)
	if s == nil || s.running == nil || s.running.pending[callID] == nil {
		return fmt.Errorf("%w: no pending approval %s in session %s", serve.ErrNotFound, callID, name)
	}
	t := s.running
	p := t.pending[callID]
	t.drop(callID)
	f.emitLocked(s, t, event.Event{Type: event.ApprovalAnswered, Agent: p.a.Agent, Tool: p.a.Tool, CallID: callID, Approval: callID, Status: status, Args: a.Args, Reason: a.Reason, By: "servetest"})
	p.answer <- a
	return nil
}

// Cancel cancels the session's running turn: its Script's context ends.
func (f *Fake) Cancel(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.session(name, false)
	if s == nil || s.running == nil {
		return fmt.Errorf("%w: session %s has no turn running", serve.ErrNotFound, name)
	}
	s.running.cancel()
	return nil
}

// Info returns Workflow.
func (f *Fake) Info() serve.WorkflowInfo { return f.Workflow }

// Wait blocks until the session's running turn, if any, has ended, or ctx
// is done: tests synchronise on it.
func (f *Fake) Wait(ctx context.Context, name string) error {
	f.mu.Lock()
	var done chan struct{}
	if s := f.session(name, false); s != nil && s.running != nil {
		done = s.running.done
	}
	f.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var _ serve.Backend = (*Fake)(nil)
