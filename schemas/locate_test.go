package schemas

import (
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

// longMappings are three skills with n errors in one long mapping each:
// metadata of n entries of the wrong type, n unknown top-level keys, n
// invalid agent names (placed through findKey); first is the first
// error and last the line of the last.
func longMappings(n int) []struct {
	name, src, first string
	last             int
} {
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
	return []struct {
		name, src, first string
		last             int
	}{
		{"metadata", meta.String(), "x.skill.yaml:6:7: metadata.k0: expected boolean or number or string, got list [schema]", n + 5},
		{"unknown keys", top.String(), `x.skill.yaml:5:1: invalid name "u0" [schema]`, n + 4},
		{"agent names", agents.String(), `x.skill.yaml:6:3: agents: invalid name "A0" [schema]`, n + 5},
	}
}

// TestErrorsInLongMapping: an error found in a long mapping is placed at
// its own key's line through the mapping's index of its keys
// (BenchmarkErrorsInLongMapping: a scan of the mapping per error made a
// skill of about 1 MiB, well under the manifest limit, take minutes).
func TestErrorsInLongMapping(t *testing.T) {
	const n = 2_000
	for _, tc := range longMappings(n) {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(tc.src), &doc); err != nil {
			t.Fatal(err)
		}
		got := Validate(KindSkill, &doc, "x.skill.yaml")
		if len(got) != n || got[0].String() != tc.first || got[n-1].Pos.Line != tc.last {
			t.Fatalf("%s: %d diagnostics, first %q, last at line %d; want %d, %q, line %d", tc.name, len(got), got[0].String(), got[n-1].Pos.Line, n, tc.first, tc.last)
		}
		for i, d := range got {
			if want := tc.last - n + 1 + i; d.Pos.Line != want {
				t.Fatalf("%s: diagnostic %d at line %d, want %d", tc.name, i, d.Pos.Line, want)
			}
		}
	}
}

// BenchmarkErrorsInLongMapping validates skills with 100,000 errors in
// one mapping (see longMappings): linear, where a scan per error took
// 3 min 20 s for the metadata case.
//
//	go test ./schemas -run '^$' -bench ErrorsInLongMapping -benchtime 1x
func BenchmarkErrorsInLongMapping(b *testing.B) {
	for _, tc := range longMappings(100_000) {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(tc.src), &doc); err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				Validate(KindSkill, &doc, "x.skill.yaml")
			}
		})
	}
}
