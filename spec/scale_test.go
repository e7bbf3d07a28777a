package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/fanout"
)

// writeFanOut writes the scale benchmarks' fan-out of n tasks and a join
// (internal/fanout), padded with a comment to at least pad bytes.
func writeFanOut(t testing.TB, n, pad int) string {
	t.Helper()
	path, err := fanout.Write(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	if pad > 0 {
		text := fanout.Workflow(n)
		var b strings.Builder
		b.WriteString(text)
		for b.Len() < pad {
			b.WriteString("# " + strings.Repeat("x", 1000) + "\n")
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// A workflow may be larger than a skill manifest (its static tasks may be
// a fan-out of 100,000), up to MaxWorkflowSize, whose error names it.
func TestWorkflowSizeLimit(t *testing.T) {
	path := writeFanOut(t, 3, MaxFileSize+1)
	w, diags := LoadWorkflow(path)
	if err := diags.Err(); err != nil || w == nil || len(w.Tasks) != 4 {
		t.Fatalf("a workflow over MaxFileSize is refused: %v", err)
	}
	path = writeFanOut(t, 3, MaxWorkflowSize+1)
	_, diags = LoadWorkflow(path)
	st, _ := os.Stat(path)
	want := fmt.Sprintf("%s:1:1: file is %d bytes, over the 16777216-byte (16 MiB) limit [limit]", path, st.Size())
	if len(diags) != 1 || diags[0].String() != want {
		t.Errorf("got %v\nwant %s", diags, want)
	}
}

// Positions survive the compact form a Node keeps them in, and a key
// repeated in a mapping too long to scan is still found.
func TestNodeKeys(t *testing.T) {
	path := writeFanOut(t, 2, 0)
	w, diags := LoadWorkflow(path)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	// Line 9: "  - {id: t1, assignee: fan/worker, goal: task 1}".
	if got := w.Tasks[1].At("goal").String(); got != path+":9:42" {
		t.Errorf("At(goal) = %s, want %s:9:42", got, path)
	}
	if got := w.Tasks[1].At("deps"); got != w.Tasks[1].Pos {
		t.Errorf("At of an absent key = %v, want the node's own %v", got, w.Tasks[1].Pos)
	}
	if !w.Tasks[2].Has("deps") || w.Tasks[1].Has("deps") {
		t.Error("Has(deps) is wrong")
	}

	var b strings.Builder
	b.WriteString("id: many\nname: Many\ndescription: Many agents.\nversion: 1.0.0\nagents:\n")
	for i := range 40 {
		fmt.Fprintf(&b, "  a%d: {description: d, prompt: p}\n", i)
	}
	b.WriteString("  a7: {description: again, prompt: p}\n")
	path = filepath.Join(t.TempDir(), "many.skill.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags = LoadSkill(path)
	want := path + `:46:3: duplicate key "a7" (first at line 13) [duplicate]`
	if len(diags) != 1 || diags[0].String() != want {
		t.Errorf("got %v\nwant %s", diags, want)
	}
}

// BenchmarkLoadFanOut loads and checks workflows of growing fan-outs: the
// cost per task must not grow with the number of tasks (no quadratic
// step in parsing, schema validation, duplicate ids, deps or cycles).
//
//	go test ./spec -run '^$' -bench LoadFanOut -benchtime 3x
func BenchmarkLoadFanOut(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			path := writeFanOut(b, n, 0)
			b.ReportAllocs()
			for b.Loop() {
				p, diags := LoadProject(path)
				if err := diags.Err(); err != nil || len(p.Workflow.Tasks) != n+1 {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/task")
		})
	}
}
