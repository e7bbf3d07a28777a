package natsboard

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/work"
)

type approverFunc func(context.Context, work.ApprovalRequest) (work.ApprovalReply, error)

func (f approverFunc) Approve(ctx context.Context, q work.ApprovalRequest) (work.ApprovalReply, error) {
	return f(ctx, q)
}

// TestApprovalsOfRunOneSubscription: a run's approval requests reach the
// coordinator on one subscription; a request for an attempt a Dispatch
// serves is answered by its approver, and one for an attempt no Dispatch
// serves (not yet, or no more) gets no responders at once, as when each
// attempt had its own subscription, so the worker counts the
// coordinator as unreachable instead of waiting for an answer.
func TestApprovalsOfRunOneSubscription(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	ctx := context.Background()
	c, err := Connect(ctx, srv.ClientURL(), Options{})
	must(t, err)
	defer c.Close()
	w, err := c.watch(ctx, "r1")
	must(t, err)
	nc, err := nats.Connect(srv.ClientURL())
	must(t, err)
	defer nc.Close()
	ask := approvalAsker{nc: nc, subject: approvalsSubject("r1", "t", 1)}
	q := work.ApprovalRequest{PendingCall: runrecord.PendingCall{Call: "task:t/s1/c1", Tool: "effect"}}
	noOne := func(when string) {
		t.Helper()
		if _, err := ask.Approve(ctx, q); !errors.Is(err, errNoCoordinator) || !strings.Contains(err.Error(), "is its fsd run or fsd resume running?") {
			t.Errorf("%s: Approve's error %v, want no responders (the server's, or the coordinator's like it)", when, err)
		}
	}
	noOne("before its Dispatch")
	done := w.approvals.add(ctx, ask.subject, approverFunc(func(_ context.Context, got work.ApprovalRequest) (work.ApprovalReply, error) {
		return work.ApprovalReply{Status: work.ApprovalRefused, Reason: "asked for " + got.Call}, nil
	}))
	rep, err := ask.Approve(ctx, q)
	if err != nil || rep.Status != work.ApprovalRefused || rep.Reason != "asked for task:t/s1/c1" {
		t.Errorf("served: Approve = %+v, %v", rep, err)
	}
	other := approvalAsker{nc: nc, subject: approvalsSubject("r1", "t", 2)}
	if _, err := other.Approve(ctx, q); err == nil || !strings.Contains(err.Error(), "is its fsd run or fsd resume running?") {
		t.Errorf("another attempt of the run: Approve's error %v, want no responders", err)
	}
	done()
	noOne("after its Dispatch")
}
