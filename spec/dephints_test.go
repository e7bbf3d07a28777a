package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnknownDepsHintsBounded: a "did you mean" for an unknown dep
// compares it with every task id, so giving one to each of thousands of
// unknown deps was quadratic (10,000 took 22s). The first maxDepHints get
// one; the rest are still reported, each at its line, without.
func TestUnknownDepsHintsBounded(t *testing.T) {
	const n = 2_000 // well past maxDepHints: the last gets no hint
	var b strings.Builder
	b.WriteString("name: big\nlimits: {max-pending-tasks: 100000, max-total-tasks: 100000}\ntasks:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {id: task%d, goal: g, deps: [tsak%d]}\n", i, i)
	}
	path := filepath.Join(t.TempDir(), "big.workflow.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	diags := ValidatePaths([]string{path}, false)
	if len(diags) != n {
		t.Fatalf("%d diagnostics, want %d", len(diags), n)
	}
	if h := diags[0].Hint; h != `did you mean "task0"?` {
		t.Errorf("first hint %q, want the suggestion", h)
	}
	if h := diags[n-1].Hint; h != "" || diags[n-1].Pos.Line != n+3 {
		t.Errorf("last: hint %q at line %d, want none at line %d", h, diags[n-1].Pos.Line, n+3)
	}
}
