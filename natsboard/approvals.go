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
	"sync"
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

// runApprovals serves the approval requests of one run's dispatched
// attempts: one subscription per run (fsd.approvals.RUN.>) rather than
// one per attempt, whose subscribe and unsubscribe cost the server and
// the coordinator more per task than the rare request itself.
type runApprovals struct {
	sub *nats.Subscription

	mu      sync.Mutex
	waiting map[string]attemptApprovals // by approvals subject
}

type attemptApprovals struct {
	ctx       context.Context
	approvals work.Approver
}

// followApprovals subscribes to the approval requests of run's attempts.
func (c *Coordinator) followApprovals(run string) (*runApprovals, error) {
	a := &runApprovals{waiting: map[string]attemptApprovals{}}
	subject := approvalSubject + "." + token(run) + ".>"
	sub, err := c.res.nc.Subscribe(subject, func(msg *nats.Msg) {
		a.mu.Lock()
		at, ok := a.waiting[msg.Subject]
		a.mu.Unlock()
		if !ok {
			noResponders(msg)
			return
		}
		// Answering may wait for a person: not on the subscription's
		// goroutine, which delivers the next request.
		go c.answer(at.ctx, msg, at.approvals)
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	a.sub = sub
	return a, nil
}

// add serves the requests on subject from approvals until done is called.
func (a *runApprovals) add(ctx context.Context, subject string, approvals work.Approver) (done func()) {
	a.mu.Lock()
	a.waiting[subject] = attemptApprovals{ctx: ctx, approvals: approvals}
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		delete(a.waiting, subject)
		a.mu.Unlock()
	}
}

func (a *runApprovals) stop() { _ = a.sub.Unsubscribe() }

// noResponders answers a request for an attempt no Dispatch serves as the
// server answers one nobody subscribes to: a 503 status without data,
// which the worker reads as nats.ErrNoResponders, so it waits and asks
// again, and counts the coordinator as unreachable, as it did when each
// attempt had a subscription of its own.
//
// U22: a request no Dispatch serves gets no responders, as before.
func noResponders(msg *nats.Msg) {
	_ = msg.RespondMsg(&nats.Msg{Header: nats.Header{"Status": []string{"503"}}})
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
