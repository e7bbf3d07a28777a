package supply

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/internal/golden"
	"github.com/fsdrun/fsd/spec"
)

// ledger records, in order: a (extractor) 2 calls, b (dep a) 1 call,
// c (unrelated, still running) 1 call, d (dep b) 1 call.
func ledger() *Ledger {
	l := NewLedger()
	for _, o := range []Observation{
		{Task: "a", Agent: "extractor", Tool: "fetch", Args: json.RawMessage(`{"week":"W1"}`), Result: "rows 1"},
		{Task: "a", Agent: "extractor", Tool: "count", Result: "3"},
		{Task: "b", Agent: "checker", Tool: "fetch", Args: json.RawMessage(`{"week":"W2"}`), Result: "offline", IsError: true},
		{Task: "c", Agent: "other", Tool: "fetch", Result: "rows c"},
		{Task: "d", Agent: "writer", Tool: "count", Result: "9"},
	} {
		l.Record(o)
	}
	l.Done("a")
	l.Done("b")
	l.Done("d")
	return l
}

func seqs(obs []Observation) []int {
	out := []int{}
	for _, o := range obs {
		out = append(out, o.Seq)
	}
	return out
}

func TestSelect(t *testing.T) {
	tests := []struct {
		name      string
		policy    spec.Flow
		task      string
		deps      []string
		ancestors []string
		want      []int
	}{
		{name: "none", policy: spec.Flow{Policy: spec.FlowNone}, task: "e", deps: []string{"d"}, want: []int{}},
		{name: "default is deps", task: "e", deps: []string{"d", "a"}, want: []int{1, 2, 5}},
		{name: "deps", policy: spec.Flow{Policy: spec.FlowDeps}, task: "e", deps: []string{"b"}, want: []int{3}},
		{name: "ancestors", policy: spec.Flow{Policy: spec.FlowAncestors}, task: "e", deps: []string{"d"}, ancestors: []string{"a", "b", "d"}, want: []int{1, 2, 3, 5}},
		{name: "recent default", policy: spec.Flow{Policy: spec.FlowRecent}, task: "e", want: []int{1, 2, 3, 4, 5}},
		{name: "recent 2", policy: spec.Flow{Policy: spec.FlowRecent, Last: 2}, task: "e", want: []int{4, 5}},
		{name: "recent skips own task", policy: spec.Flow{Policy: spec.FlowRecent, Last: 2}, task: "d", want: []int{3, 4}},
		{name: "all completed tasks", policy: spec.Flow{Policy: spec.FlowAll}, task: "e", want: []int{1, 2, 3, 5}},
		{name: "tools filter", policy: spec.Flow{Policy: spec.FlowAll, Tools: []string{"fetch"}}, task: "e", want: []int{1, 3}},
		{name: "recent counts after the filter", policy: spec.Flow{Policy: spec.FlowRecent, Last: 2, Tools: []string{"count"}}, task: "e", want: []int{2, 5}},
		// header is 20 tokens and each observation about 15-19; 60 fits two.
		{name: "max tokens keeps the newest", policy: spec.Flow{Policy: spec.FlowAll, MaxTokens: 60}, task: "e", want: []int{3, 5}},
		{name: "max tokens too small for any", policy: spec.Flow{Policy: spec.FlowAll, MaxTokens: 5}, task: "e", want: []int{}},
	}
	l := ledger()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := l.Select(tt.policy, tt.task, tt.deps, tt.ancestors, nil)
			if diff := cmp.Diff(tt.want, seqs(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMaxTokensUsesCounter(t *testing.T) {
	calls := 0
	l := NewLedger()
	for i := range 5 {
		l.Record(Observation{Task: fmt.Sprint("t", i), Tool: "x", Result: "y"})
	}
	got := l.Select(spec.Flow{Policy: spec.FlowRecent, MaxTokens: 30}, "me", nil, nil, func(s string) int { calls++; return 10 })
	if diff := cmp.Diff([]int{4, 5}, seqs(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if calls == 0 {
		t.Error("the token counter was not used")
	}
}

func TestLedgerConcurrent(t *testing.T) {
	l := NewLedger()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 100 {
				l.Record(Observation{Task: fmt.Sprint("w", w), Tool: "t", Result: fmt.Sprint(i)})
				l.Select(spec.Flow{Policy: spec.FlowRecent}, "x", nil, nil, nil)
			}
			l.Done(fmt.Sprint("w", w))
		})
	}
	wg.Wait()
	all := l.All()
	if len(all) != 800 {
		t.Fatalf("%d observations, want 800", len(all))
	}
	for i, o := range all {
		if o.Seq != i+1 {
			t.Fatalf("observation %d has seq %d", i, o.Seq)
		}
	}
	if got := len(l.Select(spec.Flow{Policy: spec.FlowAll}, "x", nil, nil, nil)); got != 800 {
		t.Errorf("all = %d observations, want 800", got)
	}
}

func TestRenderObservations(t *testing.T) {
	l := ledger()
	got := RenderObservations(l.Select(spec.Flow{Policy: spec.FlowAll}, "e", nil, nil, nil))
	golden.CheckString(t, filepath.Join("testdata", "observations.golden"), got)
	if RenderObservations(nil) != "" {
		t.Error("nothing to show must render as nothing")
	}
}
