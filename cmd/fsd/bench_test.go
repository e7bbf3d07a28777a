package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fanoutWorkflow writes what bench/fanout.sh generates: a fan-out of n
// tasks answered at once by the scripted model, joined by one more.
func fanoutWorkflow(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "skills", "fan"), 0o755); err != nil {
		b.Fatal(err)
	}
	files := map[string]string{
		"skills/fan/fan.skill.yaml": `id: fan
name: Fan
description: Answers a fan-out task at once; the joiner reports the count.
version: 1.0.0
instructions: Answer the task.
agents:
  worker: {description: Answers one task., prompt: Answer., max-steps: 2}
  joiner: {description: Joins the results., prompt: Join., max-steps: 2}
`,
		"fan.script.yaml": `agents:
  worker: [{say: 'done {{.Task.ID}}'}]
  joiner: [{say: 'joined'}]
`,
	}
	var wf strings.Builder
	fmt.Fprintf(&wf, "name: fanout-%d\nmodel: scripted\nscript: fan.script.yaml\nskills: [./skills]\n", n)
	fmt.Fprintf(&wf, "limits: {concurrency: 4, max-pending-tasks: %d, max-total-tasks: %d}\ninput: fan out\ntasks:\n", n+1, n+1)
	deps := make([]string, n)
	for i := range n {
		fmt.Fprintf(&wf, "  - {id: t%d, assignee: fan/worker, goal: task %d}\n", i, i)
		deps[i] = fmt.Sprint("t", i)
	}
	fmt.Fprintf(&wf, "  - id: join\n    assignee: fan/joiner\n    goal: join\n    deps: [%s]\n", strings.Join(deps, ", "))
	files["fan.workflow.yaml"] = wf.String()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return filepath.Join(dir, "fan.workflow.yaml")
}

// BenchmarkFanout is `fsd run` of a fan-out with its run record, in
// process (bench/fanout.sh runs the binary cold): -cpuprofile and
// -memprofile show where a big run's time and memory go.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		for _, d := range []string{"step", "commit-before-effects"} {
			b.Run(fmt.Sprintf("tasks=%d/durability=%s", n, d), func(b *testing.B) {
				wf := fanoutWorkflow(b, n)
				runs := b.TempDir()
				b.ReportAllocs()
				for b.Loop() {
					var out, errb bytes.Buffer
					if code := run([]string{"run", wf, "--runs-dir", runs, "--durability", d}, &out, &errb); code != exitOK {
						b.Fatalf("exit %d: %s", code, errb.String())
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/task")
			})
		}
	}
}
