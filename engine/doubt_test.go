package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// B7: a resumed account counts what a call reserved when no response
// line of its generator and step follows its request — in the run's
// budget and its agent's, not in the totals — and nothing for a call
// that was answered, or whose generator asked again (the resume of an
// earlier stop) and was answered then.
func TestResumeCountsCallsInDoubt(t *testing.T) {
	dir := t.TempDir()
	held := func(in, out int) *model.Usage { return &model.Usage{InputTokens: in, OutputTokens: out} }
	used := &model.Usage{InputTokens: 100, OutputTokens: 10}
	lines := []runrecord.Line{
		{Kind: runrecord.KindRequest, Gen: "transcript.jsonl", Step: 0, Held: held(500, 50)},
		{Kind: runrecord.KindResponse, Gen: "transcript.jsonl", Step: 0, Usage: used},
		{Kind: runrecord.KindRequest, Gen: "tasks/t1.jsonl", Task: "t1", Agent: "team/iso", Step: 0, Held: held(300, 30)},
		{Kind: runrecord.KindRequest, Gen: "transcript.jsonl", Step: 1, Held: held(700, 70)},
		// A resume asked step 1 again and was answered.
		{Kind: runrecord.KindRequest, Gen: "transcript.jsonl", Step: 1, Held: held(700, 70)},
		{Kind: runrecord.KindResponse, Gen: "transcript.jsonl", Step: 1, Usage: used},
		{Kind: runrecord.KindRequest, Gen: "tasks/t2.jsonl", Task: "t2", Step: 0}, // no budget held
	}
	var b strings.Builder
	for _, l := range lines {
		j, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(j, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, runrecord.RequestsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	a := newAccount(&spec.Workflow{}, spec.Limits{MaxInputTokens: 1300,
		Agents: map[string]spec.Budget{"team/iso": {MaxInputTokens: 300}}})
	calls, doubt := a.restore(runrecord.Summary{}, dir)
	if calls != 2 || doubt != *held(1000, 100) {
		t.Errorf("restore: %d calls in doubt holding %+v, want 2 holding 1000 in and 100 out", calls, doubt)
	}
	if u, _ := a.total(); u != (model.Usage{InputTokens: 200, OutputTokens: 20}) {
		t.Errorf("totals %+v, want only the two answers' usage", u)
	}
	// The run's budget: 200 used and 1000 in doubt of 1300.
	if err := a.check(model.Caller{}); err != nil {
		t.Errorf("the run's budget refused with %d left: %v", 100, err)
	}
	if _, err := a.reserve(t.Context(), model.Caller{}, 101, 0); err == nil || !strings.Contains(err.Error(), "1200 input tokens used and the next call needs 101") {
		t.Errorf("a call past what is left: %v, want refused with the calls in doubt counted", err)
	}
	// team/iso's budget is spent by its task's call in doubt.
	if err := a.check(model.Caller{TaskID: "t3", Agent: "team/iso"}); err == nil || !strings.Contains(err.Error(), "300 input tokens used, limits.agents.team/iso.max-input-tokens is 300") {
		t.Errorf("team/iso's budget: %v, want spent", err)
	}
}
