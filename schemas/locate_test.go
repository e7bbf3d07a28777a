package schemas

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"
)

// TestErrorsInLongMappingLinear: placing an error found in a long mapping
// (metadata of 100,000 entries, each of the wrong type; 100,000 unknown
// top-level keys; 100,000 invalid agent names, placed through findKey) looks its key up through an index, not by a scan of the
// mapping per error: the scans made such a file of about 1 MiB, well under
// the manifest limit, take minutes to validate. Each error is still placed
// at its own line.
func TestErrorsInLongMappingLinear(t *testing.T) {
	const n = 100_000
	head := "id: x\nname: X\ndescription: d\nversion: 1.0.0\n"
	var meta, top, agents strings.Builder
	meta.WriteString(head + "metadata:\n")
	top.WriteString(head)
	agents.WriteString(head + "agents:\n")
	for i := range n {
		fmt.Fprintf(&meta, "  k%d: [1]\n", i)
		fmt.Fprintf(&top, "u%d: v\n", i)
		fmt.Fprintf(&agents, "  A%d: {description: d, prompt: p}\n", i)
	}
	for _, tc := range []struct {
		name, src, first string
		last             int
	}{
		{"metadata", meta.String(), "x.skill.yaml:6:7: metadata.k0: expected boolean or number or string, got list [schema]", n + 5},
		{"unknown keys", top.String(), `x.skill.yaml:5:1: invalid name "u0" [schema]`, n + 4},
		{"agent names", agents.String(), `x.skill.yaml:6:3: agents: invalid name "A0" [schema]`, n + 5},
	} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(tc.src), &doc); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got := Validate(KindSkill, &doc, "x.skill.yaml")
		// Linear work is well under a second; the scans took minutes.
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("%s: Validate took %v", tc.name, d)
		}
		if len(got) != n || got[0].String() != tc.first || got[n-1].Pos.Line != tc.last {
			t.Errorf("%s: %d diagnostics, first %q, last at line %d; want %d, %q, line %d", tc.name, len(got), got[0].String(), got[n-1].Pos.Line, n, tc.first, tc.last)
		}
	}
}
