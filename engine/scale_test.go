package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/fsdrun/fsd/internal/fanout"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/scripted"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/transcript"
)

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
// run. It reports the time per task of each part and two figures of
// memory per task, each HeapInuse after a collection over the collected
// baseline before loading, divided by n: live-B/task when the join
// starts (every other task finished, the loaded project alive: what a
// finished task holds), held-B/task once the run has ended, its result
// still alive. No figure may grow per task as n grows.
//
//	go test ./engine -run '^$' -bench Scale -benchtime 1x
//	go test ./engine -run '^$' -bench 'Scale/tasks=100000$' -benchtime 1x
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 50_000, 100_000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			path, err := fanout.Write(b.TempDir(), n)
			if err != nil {
				b.Fatal(err)
			}
			var load, run, probe time.Duration
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
						t := time.Now()
						atJoin = heapInuse()
						probe += time.Since(t)
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
			b.ReportMetric(float64((run-probe).Microseconds())/per, "run-µs/task")
			b.ReportMetric(float64(live)/per, "live-B/task")
			b.ReportMetric(float64(held)/per, "held-B/task")
		})
	}
}

// G1: a finished task holds no transcript. When the join starts, every
// other task has finished, and a collection finds each worker's
// transcript unreachable, with a run record and without: the board keeps
// a task's result, not the conversation that made it.
func TestFinishedTaskHoldsNoTranscript(t *testing.T) {
	testpar.UnlessRace(t)
	const n = 20
	path, err := fanout.Write(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	p, diags := spec.LoadProject(path)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	for _, runs := range []string{"", t.TempDir()} {
		var mu sync.Mutex
		opened := map[string]weak.Pointer[transcript.Transcript]{}
		var kept []string
		m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			if req.Caller.TaskID != "join" {
				return &model.Response{Text: "done " + req.Caller.TaskID}, nil
			}
			runtime.GC()
			mu.Lock()
			defer mu.Unlock()
			for task, w := range opened {
				if task != "join" && w.Value() != nil {
					kept = append(kept, task)
				}
			}
			return &model.Response{Text: "joined"}, nil
		})
		r, err := New(p, Options{Model: m, RunsDir: runs, Key: userKey(t), opened: func(task string, tr *transcript.Transcript) {
			mu.Lock()
			opened[task] = weak.Make(tr)
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Execute(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		if len(opened) != n+1 {
			t.Fatalf("%d transcripts opened, want %d", len(opened), n+1)
		}
		if len(kept) > 0 {
			sort.Strings(kept)
			t.Errorf("runs dir %q: finished tasks still hold their transcripts while the join runs: %v", runs, kept)
		}
	}
}
