package approval

import (
	"errors"
	"testing"
	"time"

	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// Where a call's policy comes from: the tool's own, else (a tool acting
// outside fsd) its MCP server's or skill's, else the workflow's.
func TestApprovalPolicy(t *testing.T) {
	for _, tc := range []struct {
		t    Tool
		def  spec.Approve
		want spec.Approve
	}{
		{Tool{}, "", spec.ApproveNever},
		{Tool{External: true}, spec.ApproveAlways, spec.ApproveAlways},
		{Tool{External: true, Skill: spec.ApproveFirst}, spec.ApproveAlways, spec.ApproveFirst},
		{Tool{External: true, Own: spec.ApproveNever, Skill: spec.ApproveAlways}, spec.ApproveAlways, spec.ApproveNever},
		{Tool{Own: spec.ApproveAlways}, "", spec.ApproveAlways},
		// A reply, state or store tool takes no default: it acts inside fsd.
		{Tool{Skill: spec.ApproveAlways}, spec.ApproveAlways, spec.ApproveNever},
	} {
		g := New(Config{Mode: Ask, Default: tc.def, Now: time.Now})
		if got := g.Policy(tc.t); got != tc.want {
			t.Errorf("Policy(%+v, workflow %q) = %q, want %q", tc.t, tc.def, got, tc.want)
		}
	}
}

// testKey seals the answers the tests write.
var testKey = runrecord.NewKey([]byte("approval test key, 32 bytes long"))

// A second answer to the same call is refused: the first one stands.
func TestApprovalAnsweredOnce(t *testing.T) {
	dir := t.TempDir()
	a := runrecord.Answer{Call: "host/s2/c1", Decision: runrecord.Approved, Time: time.Now()}
	if _, err := runrecord.WriteAnswer(dir, testKey, a); err != nil {
		t.Fatal(err)
	}
	a.Decision = runrecord.Rejected
	if _, err := runrecord.WriteAnswer(dir, testKey, a); !errors.Is(err, runrecord.ErrAnswered) {
		t.Fatalf("second answer: %v", err)
	}
	got, ok, err := runrecord.ReadAnswer(dir, testKey, a.Call)
	if err != nil || !ok || got.Decision != runrecord.Approved {
		t.Errorf("answer on record: %+v %v %v", got, ok, err)
	}
}

// Gate.Answer keeps the first answer too, whether answers are in memory
// (a run without a record) or files in the record; it fills in the time
// and approves when no decision is given.
func TestGateAnswerFirstStands(t *testing.T) {
	for _, record := range []bool{false, true} {
		name := "in memory"
		if record {
			name = "in the record"
		}
		t.Run(name, func(t *testing.T) {
			g := New(Config{Key: testKey})
			if record {
				if err := g.Open(t.TempDir(), nil); err != nil {
					t.Fatal(err)
				}
				defer g.Close()
			}
			if err := g.Answer(runrecord.Answer{Call: "host/s2/c1", By: "test"}); err != nil {
				t.Fatal(err)
			}
			err := g.Answer(runrecord.Answer{Call: "host/s2/c1", Decision: runrecord.Rejected})
			if !errors.Is(err, runrecord.ErrAnswered) {
				t.Fatalf("second answer: %v", err)
			}
			got, ok, err := g.lookup("host/s2/c1")
			if err != nil || !ok || got.Decision != runrecord.Approved || got.By != "test" || got.Time.IsZero() {
				t.Errorf("the answer that stands: %+v %v %v", got, ok, err)
			}
			if err := g.Answer(runrecord.Answer{Call: "host/s3/c1", Decision: runrecord.Edited, Args: []byte("{")}); err == nil {
				t.Error("edited arguments that are not JSON were taken")
			}
		})
	}
}

// TestCloseWhileJournaling: a call answered as the run ends (a worker's
// call still deciding) may journal while the run closes the gate; the
// two share approvals.jsonl under the gate's lock, and what comes after
// Close is not journaled, never written to a closed file. Run with -race.
func TestCloseWhileJournaling(t *testing.T) {
	g := New(Config{Mode: Auto})
	if err := g.Open(t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		done <- g.journal(runrecord.ApprovalLine{Kind: "requested", PendingCall: runrecord.PendingCall{Call: "host/s1/c1"}})
	}()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("journal racing Close: %v", err)
	}
	if err := g.journal(runrecord.ApprovalLine{Kind: "requested"}); err != nil {
		t.Errorf("journal after Close: %v", err)
	}
}
