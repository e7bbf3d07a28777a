package work

import (
	"context"
	"time"

	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// Approver answers the approval requests of one task attempt's calls.
// On the run's side it is the run's approvals (Dispatch receives one per
// attempt); on a worker it is the transport to them (Options.Approver).
// Approve answers at most after q.Hold: a call still waiting then gets
// ApprovalPending, and the worker asks again. An error means no approver
// could be reached.
type Approver interface {
	Approve(ctx context.Context, q ApprovalRequest) (ApprovalReply, error)
}

// ApprovalRequest is a worker's call that needs approval, as it asks the
// run.
type ApprovalRequest struct {
	// PendingCall is the call: its id (FSD_CALL_ID, the same on every
	// delivery of the attempt), tool, arguments, task and agent.
	runrecord.PendingCall
	// Policy is the call's approval policy as the worker resolved it from
	// the skill and the workflow's default: always or first.
	Policy spec.Approve `json:"policy"`
	// Grant is set when a trusted skill's allowed-tools lists the call
	// (as the worker, which runs the skill's programs, judged it): the
	// run records it and answers ApprovalFree, or rejects the call under
	// --approve deny.
	Grant *runrecord.Grant `json:"grant,omitempty"`
	// Hold is how long the run may hold the request before answering
	// ApprovalPending.
	Hold time.Duration `json:"hold"`
	// Taking: the worker was given a fresh answer that lets the call run
	// and is about to run it. The run replies whether it is still fresh
	// (no worker took it before) and counts the call as taken: from now
	// on it may have run. Only a worker that takes an answer can have run
	// the call — a reply sent to a worker that had already stopped
	// waiting (its task handed back) is not a reason for doubt.
	Taking bool `json:"taking,omitempty"`
}

// The statuses of an ApprovalReply.
const (
	// ApprovalAnswered: Answer holds the answer (approved, edited or
	// rejected).
	ApprovalAnswered = "answered"
	// ApprovalFree: the call needs no answer (an approve: first tool
	// approved before in this run).
	ApprovalFree = "free"
	// ApprovalPending: no answer yet; ask again.
	ApprovalPending = "pending"
	// ApprovalRefused: the run refused the request (Reason); the call is
	// not run.
	ApprovalRefused = "refused"
)

// ApprovalReply is the run's reply to an ApprovalRequest.
type ApprovalReply struct {
	// Status is one of ApprovalAnswered, ApprovalFree, ApprovalPending
	// and ApprovalRefused.
	Status string `json:"status"`
	// Answer is the answer (ApprovalAnswered).
	Answer *runrecord.Answer `json:"answer,omitempty"`
	// Fresh: the answer was given for this asking, and no worker took it
	// before (ApprovalRequest.Taking) — so the call cannot have run (the
	// in-doubt rule of a replayed step does not apply). To a request that
	// is not Taking it is provisional: the worker takes the answer before
	// it counts.
	Fresh bool `json:"fresh,omitempty"`
	// Reason says why the request was refused (ApprovalRefused).
	Reason string `json:"reason,omitempty"`
}
