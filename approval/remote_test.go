package approval

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/work"
)

// TestRemoteAnswerThatReachedNoWorkerIsFresh: a worker asked and stopped
// (SIGTERM hands its task back) before the answer came; the coordinator's
// handler of its request still got the answer and sent it to nobody. The
// worker that takes over the task gets the same answer fresh — the call
// certainly did not run, so the in-doubt rule (on-interrupt: fail would
// read "outcome unknown") does not apply. Once a worker has taken the
// answer the call may have run: a later delivery gets it not fresh. No
// one is asked twice.
func TestRemoteAnswerThatReachedNoWorkerIsFresh(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	asked := 0
	coord := New(Config{Mode: Auto, Emit: func(e event.Event) {
		if e.Type == event.ApprovalRequested {
			asked++
		}
	}})
	r := coord.Remote(ctx, "deploy", "ops/a", 1)
	call := runrecord.PendingCall{Call: "task:deploy/s1/c1", Tool: "effect"}

	// The stopped worker's request: answered, but the reply reaches no one.
	rep, err := r.Approve(ctx, work.ApprovalRequest{PendingCall: call, Policy: spec.ApproveAlways, Hold: time.Second})
	if err != nil || rep.Status != work.ApprovalAnswered {
		t.Fatalf("first request: %+v, %v", rep, err)
	}
	worker := func() *Gate {
		return ForWorker(&work.Attempt{}, work.Options{Approver: r, Logger: zerolog.Nop()}, nil)
	}
	for i, wantFresh := range []bool{true, false} {
		ans, needed, fresh, err := worker().decide(ctx, call, spec.ApproveAlways, runrecord.Grant{})
		if err != nil || !needed || ans.Call != call.Call || ans.By != "auto" {
			t.Fatalf("delivery %d: %+v needed=%v err=%v", i+2, ans, needed, err)
		}
		if fresh != wantFresh {
			t.Errorf("delivery %d: fresh=%v, want %v", i+2, fresh, wantFresh)
		}
	}
	if asked > 1 {
		t.Errorf("asked %d times, want once", asked)
	}
}

// TestRemoteTakesOnlyItsAttemptsCalls: an attempt's approver answers the
// calls whose ids start with that attempt's generator name
// (work.Attempt.Name) and refuses another attempt's, so a late worker of
// attempt 1 cannot have a call of attempt 2 approved, nor the reverse.
func TestRemoteTakesOnlyItsAttemptsCalls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	for _, tt := range []struct {
		attempt int
		call    string
		want    string
	}{
		{1, "task:deploy/s1/c1", work.ApprovalAnswered},
		{1, "task:deploy#2/s1/c1", work.ApprovalRefused},
		{2, "task:deploy#2/s1/c1", work.ApprovalAnswered},
		{2, "task:deploy/s1/c1", work.ApprovalRefused},
		{2, "task:deploy#2/", work.ApprovalRefused},
	} {
		r := New(Config{Mode: Auto}).Remote(ctx, "deploy", "ops/a", tt.attempt)
		q := work.ApprovalRequest{PendingCall: runrecord.PendingCall{Call: tt.call, Tool: "effect"}, Policy: spec.ApproveAlways, Hold: time.Second}
		rep, err := r.Approve(ctx, q)
		if err != nil || rep.Status != tt.want {
			t.Errorf("attempt %d, call %s: %+v, %v; want status %s", tt.attempt, tt.call, rep, err, tt.want)
		}
	}
}

// TestRemoteGrant: a worker's call that a skill's allowed-tools grants is
// recorded by the coordinator, runs without anyone asked, and does not
// make later calls of an approve: first tool free; under --approve deny
// the coordinator rejects it.
func TestRemoteGrant(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	grant := runrecord.Grant{Skill: "ops", Rule: "effect"}
	for _, mode := range []Mode{Ask, Deny} {
		var evs []event.Event
		coord := New(Config{Mode: mode, Emit: func(e event.Event) { evs = append(evs, e) }})
		w := ForWorker(&work.Attempt{}, work.Options{Approver: coord.Remote(ctx, "deploy", "ops/a", 1), Logger: zerolog.Nop()}, nil)
		call := runrecord.PendingCall{Call: "task:deploy/s1/c1", Tool: "effect"}
		ans, needed, _, err := w.decide(ctx, call, spec.ApproveFirst, grant)
		if err != nil {
			t.Fatal(err)
		}
		if mode == Deny {
			if !needed || ans.Decision != runrecord.Rejected || ans.By != "deny" {
				t.Errorf("deny: %+v needed=%v", ans, needed)
			}
			continue
		}
		if needed || len(evs) != 1 || evs[0].Type != event.ApprovalGranted || evs[0].Skill != "ops" || evs[0].Approval != call.Call {
			t.Errorf("granted: needed=%v, coordinator's events %+v", needed, evs)
		}
		if w.first["effect"] {
			t.Error("a granted call counted as an approval for approve: first")
		}
	}
}
