package board

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"
)

func zero(_ context.Context, t *Task, _ []DepResult) (string, error) { return t.ID, nil }

// fanOut builds N independent tasks and one join that depends on all.
func fanOut(n int) []TaskSpec {
	specs := make([]TaskSpec, 0, n+1)
	deps := make([]string, n)
	for i := range n {
		id := "w" + strconv.Itoa(i)
		deps[i] = id
		specs = append(specs, TaskSpec{ID: id, Goal: "part " + id})
	}
	return append(specs, TaskSpec{ID: "join", Goal: "join", Deps: deps})
}

func chain(n int) []TaskSpec {
	specs := make([]TaskSpec, n)
	for i := range n {
		specs[i] = TaskSpec{ID: "c" + strconv.Itoa(i), Goal: "step"}
		if i > 0 {
			specs[i].Deps = []string{specs[i-1].ID}
		}
	}
	return specs
}

// runBoard adds specs one by one (as addTask calls would) and runs the
// board; it reports per-task time, bytes and allocations, and the heap in
// use at the end of the run.
func runBoard(b *testing.B, specs []TaskSpec, runner Runner, concurrency int) {
	once := func() *Board {
		bd := New(Options{Concurrency: concurrency, MaxPending: -1, MaxTotal: -1})
		for _, s := range specs {
			if _, err := bd.Add(s); err != nil {
				b.Fatal(err)
			}
		}
		rep, err := bd.Run(context.Background(), runner)
		if err != nil || rep.Status != StatusDrained {
			b.Fatalf("run: %s %v", rep.Status, err)
		}
		return bd
	}
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for b.Loop() {
		once()
	}
	elapsed := b.Elapsed()
	runtime.ReadMemStats(&after)
	tasks := float64(b.N * len(specs))
	b.ReportMetric(float64(elapsed.Nanoseconds())/tasks/1000, "µs/task")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/tasks, "B/task")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/tasks, "allocs/task")

	// Heap in use with one finished board still alive, over a collected
	// baseline: the memory a board of this size holds.
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&before)
	bd := once()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapInuse-min(before.HeapInuse, after.HeapInuse))/(1<<20), "heap-inuse-MB")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), "alloc-per-board-MB")
	runtime.KeepAlive(bd)
}

func BenchmarkFanOutFanIn(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		specs := fanOut(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) { runBoard(b, specs, zero, DefaultConcurrency) })
	}
}

func BenchmarkChain1000(b *testing.B) {
	runBoard(b, chain(1000), zero, DefaultConcurrency)
}

// BenchmarkSleep50ms: 100 independent tasks whose worker takes 50 ms, at
// concurrency 4, should take about 25 × 50 ms = 1.25 s; ratio reports
// elapsed over that ideal.
func BenchmarkSleep50ms(b *testing.B) {
	specs := fanOut(100)[:100]
	sleepy := func(ctx context.Context, t *Task, _ []DepResult) (string, error) {
		select {
		case <-time.After(50 * time.Millisecond):
			return t.ID, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	runBoard(b, specs, sleepy, 4)
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(per.Milliseconds()), "ms/board")
	b.ReportMetric(float64(per)/float64(25*50*time.Millisecond), "ratio-to-ideal")
}
