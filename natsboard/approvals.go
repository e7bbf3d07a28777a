package natsboard

// Approvals of calls made on workers (work.Approver over NATS): a
// worker sends each call that needs approval to the coordinator as a
// request on the attempt's approvals subject and asks again until an
// answer comes; the coordinator answers from its run's approvals. The
// state lives with the coordinator (approvals.jsonl, the answer files of
// its run record), not in NATS: a request is cheap to send again, so a
// coordinator that restarts (fsd resume) is asked anew and answers from
// its record, and a worker that takes over a redelivered task gets the
// answer given to the first one without anyone being asked twice.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/fsdrun/fsd/work"
)

// maxHold bounds how long the coordinator holds one request, whatever
// the worker asks for.
const maxHold = 30 * time.Second

// replyMargin is how much longer than the hold a worker waits for the
// reply before it counts the coordinator as unreachable.
const replyMargin = 5 * time.Second

// answerApprovals serves the approval requests of one dispatched attempt
// until the returned subscription is unsubscribed.
func (c *Coordinator) answerApprovals(ctx context.Context, subject string, approvals work.Approver) (*nats.Subscription, error) {
	sub, err := c.res.nc.Subscribe(subject, func(msg *nats.Msg) {
		// Answering may wait for a person: not on the subscription's
		// goroutine, which delivers the next request.
		go c.answer(ctx, msg, approvals)
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	return sub, nil
}

func (c *Coordinator) answer(ctx context.Context, msg *nats.Msg, approvals work.Approver) {
	var q work.ApprovalRequest
	var rep work.ApprovalReply
	if err := json.Unmarshal(msg.Data, &q); err != nil || q.Call == "" {
		rep = work.ApprovalReply{Status: work.ApprovalRefused, Reason: "unreadable approval request"}
	} else {
		hctx, cancel := context.WithTimeout(ctx, min(max(q.Hold, 0), maxHold))
		rep, err = approvals.Approve(hctx, q)
		cancel()
		if err != nil {
			rep = work.ApprovalReply{Status: work.ApprovalPending}
		}
	}
	data, err := json.Marshal(rep)
	if err == nil {
		err = msg.Respond(data)
	}
	if err != nil {
		// The worker asks again.
		c.opts.Logger.Debug().Err(err).Str("subject", msg.Subject).Msg("approval reply not sent")
	}
}

// approvalAsker is a worker's work.Approver: one request to the
// coordinator per Approve.
type approvalAsker struct {
	nc      *nats.Conn
	subject string
}

var errNoCoordinator = errors.New("no coordinator answers")

func (a approvalAsker) Approve(ctx context.Context, q work.ApprovalRequest) (work.ApprovalReply, error) {
	data, err := json.Marshal(q)
	if err != nil {
		return work.ApprovalReply{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, min(max(q.Hold, 0), maxHold)+replyMargin)
	defer cancel()
	msg, err := a.nc.RequestWithContext(rctx, a.subject, data)
	if errors.Is(err, nats.ErrNoResponders) {
		return work.ApprovalReply{}, fmt.Errorf("%w on %s (is its fsd run or fsd resume running?)", errNoCoordinator, a.subject)
	}
	if err != nil {
		return work.ApprovalReply{}, fmt.Errorf("%w: %v", errNoCoordinator, err)
	}
	var rep work.ApprovalReply
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		return work.ApprovalReply{Status: work.ApprovalRefused, Reason: "unreadable reply: " + err.Error()}, nil
	}
	return rep, nil
}
