package serve

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/fsdrun/fsd/event"
)

// Backend is what a protocol adapter drives: sessions, their turns, their
// events, their approvals. The server implements it over engine sessions;
// servetest.Fake implements it for adapters' tests.
//
// Y1: the adapters see only this seam.
type Backend interface {
	// Send starts a turn of session (created on first use) with message.
	// ErrBusy when the session has a turn running (one at a time).
	Send(ctx context.Context, session, message string) (TurnInfo, error)
	// Events streams the session's events with id > after (0: from the
	// first event of the session) — recorded ones first, then live ones —
	// and closes the channel when the turn running at the call ends (or
	// at once after the recorded ones when none runs) or ctx is done.
	// What streams follows itemVisibility.client, as the live board.
	Events(ctx context.Context, session string, after int64) (<-chan Event, error)
	// Recorded streams the session's events with id > after of the turns
	// that have ended, and closes the channel after the last of them: it
	// never waits for the turn running at the call.
	Recorded(ctx context.Context, session string, after int64) (<-chan Event, error)
	// Pending lists the approvals the session's running turn waits for.
	Pending(session string) ([]Approval, error)
	// Answer answers one pending approval: approve, edit (with args) or
	// reject (with reason).
	Answer(session, callID string, a Answer) error
	// Cancel stops the session's running turn (it stays resumable).
	Cancel(session string) error
	// Info describes the workflow and its catalog (the A2A card's source).
	Info() WorkflowInfo
}

// Event is one event of a session, numbered.
type Event struct {
	// ID is monotonic per session and stable across server restarts: it
	// is the event's place in the session's record (1 for the first).
	ID int64
	// Turn is the turn the event belongs to, 1 for the first.
	Turn int
	event.Event
}

// TurnInfo names a turn Send started.
type TurnInfo struct {
	Session string
	Turn    int
	RunID   string
}

// Approval is a call waiting for a person's answer.
type Approval struct {
	CallID, Tool, Agent string
	Args                json.RawMessage
}

// The decisions an Answer takes.
const (
	Approve = "approve"
	Edit    = "edit"
	Reject  = "reject"
)

// Answer is a person's answer to an approval: Decision is Approve, Edit
// (the call runs with Args instead) or Reject (the model reads Reason).
type Answer struct {
	Decision string
	Args     json.RawMessage
	Reason   string
}

// WorkflowInfo describes the served workflow and its catalog.
type WorkflowInfo struct {
	Name, Description, Version string
	Skills                     []SkillInfo
}

// SkillInfo is one skill of the catalog.
type SkillInfo struct {
	ID, Name, Description string
	Tags                  []string
}

var (
	// ErrBusy: the session has a turn running (one at a time).
	ErrBusy = errors.New("the session has a turn running")
	// ErrNotFound: no such session, or no such pending approval.
	ErrNotFound = errors.New("not found")
)

// ErrInvalid is wrapped by errors about a caller's request itself (an
// unknown decision, an empty message): a client fixes it, retrying does not.
var ErrInvalid = errors.New("invalid request")
