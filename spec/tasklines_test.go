package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// taskLineDocs are workflows whose task lines parseWorkflow builds, wholly
// or in part, or must leave to the parser: each must come out exactly as
// the parser reads it.
var taskLineDocs = map[string]string{
	"fan-out and a block item":    "name: fan\ntasks:\n  - {id: t0, assignee: fan/worker, goal: task 0}\n  - {id: t1, assignee: fan/worker, goal: task 1}\n  - id: join\n    assignee: fan/joiner\n    goal: join\n    deps: [t0, t1]\n",
	"flow items only, then a key": "tasks:\n  - {id: a, goal: one}\n  - {id: b, goal: two}\nname: x\n",
	"at the key's indent":         "name: x\ntasks:\n- {id: a, goal: one}\n- {id: b, goal: two}\n- id: c\n  goal: three\n",
	"spaces around":               "tasks:\n  - { id: a ,  goal: two  words  }   \n",
	"last line without a newline": "name: x\ntasks:\n  - {id: a, goal: one}",
	"a comment between items":     "tasks:\n  - {id: a, goal: one}\n  # a comment\n  - {id: b, goal: two}\n",
	"a blank line between items":  "tasks:\n  - {id: a, goal: one}\n\n  - {id: b, goal: two}\n",
	"a number stops the lines":    "tasks:\n  - {id: a, goal: one}\n  - {id: b, goal: 2}\n  - {id: c, goal: three}\n",
	"a bool and a null":           "tasks:\n  - {id: a, goal: one}\n  - {id: b, goal: true}\n  - {id: c, goal: null}\n",
	"a key twice":                 "tasks:\n  - {id: a, id: b}\n",
	"not ASCII":                   "tasks:\n  - {id: a, goal: café}\n",
	"quoted":                      "tasks:\n  - {id: a, goal: 'one'}\n",
	"a trailing comma":            "tasks:\n  - {id: a, goal: one,}\n",
	"a deeper item":               "tasks:\n  - {id: a, goal: one}\n    - {id: b, goal: two}\n",
	"a shallower sequence after":  "tasks:\n  - {id: a, goal: one}\n- {id: b, goal: two}\n",
	"a mapping after":             "tasks:\n  - {id: a, goal: one}\n  foo: bar\n",
	"tasks in a block scalar":     "input: |\n  x\ntasks:\n  - {id: a, goal: one}\n",
	"tasks twice":                 "tasks:\n  - {id: a, goal: one}\ntasks:\n  - {id: b, goal: two}\n",
	"a carriage return":           "tasks:\r\n  - {id: a, goal: one}\r\n",
	"an anchor after":             "tasks:\n  - {id: a, goal: one}\n  - &x {id: b, goal: two}\n",
	"a flow root":                 "{name: x,\ntasks:\n  - {id: a, goal: one}\n}\n",
	"a document marker":           "---\ntasks:\n  - {id: a, goal: one}\n...\n",
	"a second document":           "tasks:\n  - {id: a, goal: one}\n---\nname: x\n",
	"nested flow":                 "tasks:\n  - {id: a, goal: {x: y}}\n",
	"tasks: with a value":         "tasks: []\n  - {id: a, goal: one}\n",
	"colon without a space":       "tasks:\n  - {id: a, goal:one}\n",
	"a value ending the mapping":  "tasks:\n  - {id: a, goal: one} # c\n",
	"empty mapping":               "tasks:\n  - {}\n",
	"nine keys":                   "tasks:\n  - {a: a, b: b, c: c, d: d, e: e, f: f, g: g, h: h, i: i}\n",
}

// F7: the tree parseWorkflow makes is the parser's, node for node, and a
// file the parser rejects is rejected with the same diagnostics.
func TestTaskLinesParseAsTheParserDoes(t *testing.T) {
	built := 0
	for name, doc := range taskLineDocs {
		t.Run(name, func(t *testing.T) {
			if grafted(doc) {
				built++
			}
			checkTaskLines(t, doc)
		})
	}
	if built < 10 {
		t.Errorf("the lines of only %d documents were built: the test no longer exercises them", built)
	}
}

// A workflow of many task lines, as bench/fanout.sh writes it, comes out
// as the parser reads it, with every one of its lines built.
func TestTaskLinesFanout(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: fanout\nmodel: scripted\ntasks:\n")
	const n = 600 // more than one slab of nodes
	for i := range n {
		fmt.Fprintf(&b, "  - {id: t%d, assignee: fan/worker, goal: task %d}\n", i, i)
	}
	b.WriteString("  - id: join\n    assignee: fan/joiner\n    goal: join\n    deps: [t0, t1]\n")
	tl := scanTaskLines([]byte(b.String()))
	if tl == nil || len(tl.items) != n || !grafted(b.String()) {
		t.Fatalf("the task lines were not built and grafted (%d lines taken, want %d)", len(tl.items), n)
	}
	checkTaskLines(t, b.String())
}

// grafted reports whether parseWorkflow builds doc's task lines itself.
func grafted(doc string) bool {
	tl := scanTaskLines([]byte(doc))
	if tl == nil || checkText("w.yaml", []byte(doc)) != nil {
		return false
	}
	root, diags := parseYAML("w.yaml", tl.blanked)
	return diags == nil && tl.graft(root)
}

func checkTaskLines(t *testing.T, doc string) {
	t.Helper()
	want, wantDiags := parseYAML("w.yaml", []byte(doc))
	got, gotDiags := parseWorkflow("w.yaml", []byte(doc))
	if diff := cmp.Diff(wantDiags, gotDiags); diff != "" {
		t.Errorf("diagnostics (-parser +parseWorkflow):\n%s", diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tree (-parser +parseWorkflow):\n%s", diff)
	}
}

func FuzzTaskLines(f *testing.F) {
	for _, doc := range taskLineDocs {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		checkTaskLines(t, doc)
	})
}
