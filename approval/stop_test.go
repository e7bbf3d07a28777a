package approval

import (
	"context"
	"errors"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// In mode Stop a call with no answer on record is not waited for: it is
// listed as pending (run.json, approvals.jsonl, approval.requested), the
// run is halted with ErrWaiting and nothing runs; once answered (fsd
// approve), the same call in a resumed run goes on with the answer.
func TestStopModeHaltsAndResumes(t *testing.T) {
	dir := t.TempDir()
	var requested []event.Event
	var listed []runrecord.PendingCall
	g := New(Config{Mode: Stop, Key: testKey, Emit: func(e event.Event) {
		if e.Type == event.ApprovalRequested {
			requested = append(requested, e)
		}
	}})
	var halted error
	g.Start(func() bool { return halted != nil }, func(err error) { halted = err }, nil)
	if err := g.Open(dir, func(p []runrecord.PendingCall) { listed = p }); err != nil {
		t.Fatal(err)
	}
	call := runrecord.PendingCall{Call: "task:ship/s1/c1", Tool: "publish", Task: "ship"}
	tool := Tool{Own: spec.ApproveAlways}
	res, err := g.Check(context.Background(), call, tool)
	if !errors.Is(err, ErrWaiting) || !errors.Is(halted, ErrWaiting) {
		t.Fatalf("Check: %+v, %v; halted with %v", res, err, halted)
	}
	if len(listed) != 1 || listed[0].Call != call.Call || len(g.Pending()) != 1 || len(requested) != 1 {
		t.Errorf("pending in run.json %+v, in the gate %+v, requested events %d", listed, g.Pending(), len(requested))
	}
	g.Close()

	// fsd approve, then a resume (a new gate on the same record).
	if _, err := runrecord.WriteAnswer(dir, testKey, runrecord.Answer{Call: call.Call, Decision: runrecord.Approved, By: "fsd approve"}); err != nil {
		t.Fatal(err)
	}
	g = New(Config{Mode: Stop, Key: testKey})
	g.Start(func() bool { return false }, func(err error) { t.Errorf("the resumed run was halted: %v", err) }, listed)
	if err := g.Open(dir, func([]runrecord.PendingCall) {}); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	res, err = g.Check(context.Background(), call, tool)
	if err != nil || res.Reject != nil || !res.Fresh {
		t.Errorf("the answered call on resume: %+v, %v", res, err)
	}
	if p := g.Pending(); len(p) != 0 {
		t.Errorf("still pending after the answer: %+v", p)
	}
}
