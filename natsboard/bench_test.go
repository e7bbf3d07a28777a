package natsboard

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkFanout runs a fan-out of N tasks (default 10,000; FSD_BENCH_TASKS
// sets it) joined by one more, scripted model, no run record: on the
// in-process board, and through an embedded NATS server to 4 `fsd worker`
// processes (concurrency 4 each). It reports the time per task and the
// tasks per second; the difference per task is what NATS costs.
//
//	go test ./natsboard -run '^$' -bench Fanout -benchtime 1x
func BenchmarkFanout(b *testing.B) {
	n := 10000
	if s := os.Getenv("FSD_BENCH_TASKS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("FSD_BENCH_TASKS=%q", s)
		}
	}
	wf := fanout(b, n, "")
	report := func(b *testing.B, elapsed time.Duration, runs int) {
		per := elapsed / time.Duration(runs*(n+1))
		b.ReportMetric(float64(per.Microseconds()), "µs/task")
		b.ReportMetric(float64(runs*(n+1))/elapsed.Seconds(), "tasks/s")
	}
	b.Run(fmt.Sprintf("in-process/%d", n), func(b *testing.B) {
		runs := 0
		start := time.Now()
		for b.Loop() {
			if _, err := runWorkflowIn(b, wf, nil, ""); err != nil {
				b.Fatal(err)
			}
			runs++
		}
		report(b, time.Since(start), runs)
	})
	b.Run(fmt.Sprintf("nats-4-workers/%d", n), func(b *testing.B) {
		srv := runServer(b)
		for i := range 4 {
			w := worker(b, srv.ClientURL(), fmt.Sprintf("w%d", i+1), "--concurrency", "4")
			_ = w
		}
		// Quiet workers: -v logs a line per task.
		c, err := Connect(context.Background(), srv.ClientURL(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		p := project(b, wf)
		if err := c.Publish(context.Background(), p); err != nil {
			b.Fatal(err)
		}
		runs := 0
		start := time.Now()
		for b.Loop() {
			if _, err := runWorkflowIn(b, wf, c, ""); err != nil {
				b.Fatal(err)
			}
			runs++
		}
		report(b, time.Since(start), runs)
	})
}
