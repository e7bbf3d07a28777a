package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/scripted"
	"github.com/fsdrun/fsd/spec"
)

// writeFanOut writes the fan-out workflow bench/fanout.sh generates: n
// tasks, each answered at once by the scripted model, joined by one more,
// with the limits raised to fit them. It returns the workflow's path.
func writeFanOut(tb testing.TB, dir string, n int) string {
	tb.Helper()
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
	var w strings.Builder
	fmt.Fprintf(&w, "name: fanout-%d\nmodel: scripted\nscript: fan.script.yaml\nskills: [./skills]\n", n)
	fmt.Fprintf(&w, "limits: {concurrency: 4, max-pending-tasks: %d, max-total-tasks: %d}\n", n+1, n+1)
	w.WriteString("input: fan out\ntasks:\n")
	for i := range n {
		fmt.Fprintf(&w, "  - {id: t%d, assignee: fan/worker, goal: task %d}\n", i, i)
	}
	w.WriteString("  - id: join\n    assignee: fan/joiner\n    goal: join\n    deps: [")
	for i := range n {
		if i > 0 {
			w.WriteString(", ")
		}
		w.WriteString("t" + strconv.Itoa(i))
	}
	w.WriteString("]\n")
	files["fan.workflow.yaml"] = w.String()
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return filepath.Join(dir, "fan.workflow.yaml")
}

// heapInuse is the heap in use after a full collection.
func heapInuse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// BenchmarkScale runs the fan-out of n tasks and a join, with no run
// record, as `fsd run` does: loading and checking the workflow, then the
// run. It reports the time per task of each part and the bytes per task
// the process still holds when the run has ended, with its result and
// the loaded project alive: HeapInuse after a collection, over the
// collected baseline before loading, divided by n. No part may cost more
// per task as n grows.
//
//	go test ./engine -run '^$' -bench Scale -benchtime 1x
//	go test ./engine -run '^$' -bench 'Scale/tasks=100000$' -benchtime 1x
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 50_000, 100_000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			path := writeFanOut(b, b.TempDir(), n)
			var load, run time.Duration
			var live, held uint64
			for b.Loop() {
				base := heapInuse()
				t0 := time.Now()
				p, diags := spec.LoadProject(path)
				if err := diags.Err(); err != nil {
					b.Fatal(err)
				}
				script, err := scripted.Load(filepath.Join(filepath.Dir(path), "fan.script.yaml"))
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				sm := scripted.New(script, nil)
				var atJoin uint64
				m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
					if req.Caller.TaskID == "join" && req.Caller.Step == 0 {
						atJoin = heapInuse()
					}
					return sm.Generate(ctx, req)
				})
				r, err := New(p, Options{Model: m})
				if err != nil {
					b.Fatal(err)
				}
				res, err := r.Execute(context.Background(), "")
				if err != nil {
					b.Fatal(err)
				}
				load, run = load+t1.Sub(t0), run+time.Since(t1)
				if res.Answer == "" {
					b.Fatal("no answer")
				}
				end := heapInuse()
				live += atJoin - min(base, atJoin)
				held += end - min(base, end)
				runtime.KeepAlive(r)
				runtime.KeepAlive(res)
				runtime.KeepAlive(p)
			}
			per := float64(b.N * n)
			b.ReportMetric(float64(load.Microseconds())/per, "load-µs/task")
			b.ReportMetric(float64(run.Microseconds())/per, "run-µs/task")
			b.ReportMetric(float64(live)/per, "live-B/task")
			b.ReportMetric(float64(held)/per, "held-B/task")
		})
	}
}
