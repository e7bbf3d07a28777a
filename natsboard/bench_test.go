package natsboard

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/work"
)

// BenchmarkFanout runs a fan-out of N tasks (default 10,000; FSD_BENCH_TASKS
// sets it) joined by one more, scripted model, without and with a run
// record: on the in-process board, and through an embedded NATS server to
// 4 `fsd worker` processes (concurrency 4 each, as deployed: no -v, the
// default ack wait). It reports the time per task and the
// tasks per second; the difference per task is what NATS costs. Through
// NATS it also reports the CPU per task of the benchmark's process (the
// coordinator and the embedded server) and of the worker processes, and
// the messages and bytes through the server per task; and it runs the
// same number of tasks through NATS alone, with nothing of fsd
// (floor_test.go), so that what NATS costs and what fsd adds to it are
// told apart.
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
	// With a run record (as fsd run keeps one) the coordinator also copies
	// each remote task's transcript from the journal stream into it.
	for _, record := range []bool{false, true} {
		suffix := ""
		if record {
			suffix = "-record"
		}
		runsDir := func() string {
			if record {
				return b.TempDir()
			}
			return ""
		}
		b.Run(fmt.Sprintf("in-process%s/%d", suffix, n), func(b *testing.B) {
			runs := 0
			start := time.Now()
			for b.Loop() {
				if _, err := runWorkflowIn(b, wf, nil, runsDir()); err != nil {
					b.Fatal(err)
				}
				runs++
			}
			report(b, time.Since(start), runs)
		})
		b.Run(fmt.Sprintf("nats-4-workers%s/%d", suffix, n), func(b *testing.B) {
			srv := runServer(b)
			var workers []int
			for i := range 4 {
				// Workers as a deployment starts them: without -v (a log
				// line per task, which this process would read from each
				// worker's pipe) and with the default ack wait.
				p := start(b, b.TempDir(), nil, "worker", "--nats", srv.ClientURL(), "--name", fmt.Sprintf("w%d", i+1), "--cache", b.TempDir(), "--concurrency", "4")
				workers = append(workers, p.cmd.Process.Pid)
			}
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
			v0, _ := srv.Varz(nil)
			cpu0, wcpu0 := cpuTime(), procsCPU(b, workers)
			start := time.Now()
			for b.Loop() {
				if _, err := runWorkflowIn(b, wf, c, runsDir()); err != nil {
					b.Fatal(err)
				}
				runs++
			}
			report(b, time.Since(start), runs)
			reportCPU(b, cpuTime()-cpu0, procsCPU(b, workers)-wcpu0, runs*(n+1))
			reportTraffic(b, srv, v0, runs*(n+1))
		})
		if !record {
			// NATS alone (floor_test.go): one task a message, and four.
			b.Run(fmt.Sprintf("nats-floor-4-workers/%d", n), func(b *testing.B) { benchFloor(b, n, 1) })
			b.Run(fmt.Sprintf("nats-floor-4-workers-4-a-message/%d", n), func(b *testing.B) { benchFloor(b, n, 4) })
		}
	}
}

// BenchmarkThroughput runs the fan-out of BenchmarkFanout (default 2,000
// tasks; FSD_BENCH_TASKS sets it) without a record, on the in-process
// board and through an embedded NATS server on loopback to 1, 4 and 8
// in-process workers (concurrency 4 each). Beside wall time per task and
// tasks per second it reports CPU time per task (user+sys of this
// process: coordinator, workers and server alike), which a loaded machine
// moves far less than wall time, the messages in and out of the server
// and the allocations (coordinator, workers and server) per task. What
// NATS adds per task is the
// difference with the in-process figure. Each is counted from the
// second run on: the first also pays for what a new pool does once.
//
//	go test ./natsboard -run '^$' -bench Throughput -benchtime 3x
func BenchmarkThroughput(b *testing.B) {
	n := 2000
	if s := os.Getenv("FSD_BENCH_TASKS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("FSD_BENCH_TASKS=%q", s)
		}
	}
	wf := fanout(b, n, "")
	measure := func(b *testing.B, d work.Dispatcher, srv *server.Server) {
		b.ReportAllocs()
		// One run first, not counted: a new pool's first run also pays
		// for what its workers do once (fetch the skill bundle and the
		// script, open their queue and workspace), which a pool serving
		// many runs does not pay per task.
		if _, err := runWorkflowIn(b, wf, d, ""); err != nil {
			b.Fatal(err)
		}
		var v0 *server.Varz
		if srv != nil {
			v0, _ = srv.Varz(nil)
		}
		runs := 0
		cpu0 := cpuTime()
		start := time.Now()
		for b.Loop() {
			if _, err := runWorkflowIn(b, wf, d, ""); err != nil {
				b.Fatal(err)
			}
			runs++
		}
		elapsed, cpu := time.Since(start), cpuTime()-cpu0
		tasks := float64(runs * (n + 1))
		b.ReportMetric(float64(elapsed.Microseconds())/tasks, "µs/task")
		b.ReportMetric(float64(cpu.Microseconds())/tasks, "cpu-µs/task")
		b.ReportMetric(tasks/elapsed.Seconds(), "tasks/s")
		if srv != nil {
			reportTraffic(b, srv, v0, int(tasks))
		}
	}
	b.Run(fmt.Sprintf("in-process/%d", n), func(b *testing.B) { measure(b, nil, nil) })
	for _, workers := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("nats-%d-workers/%d", workers, n), func(b *testing.B) {
			srv := runServer(b)
			for i := range workers {
				serve(b, srv.ClientURL(), WorkerOptions{Work: engine.Work, Name: fmt.Sprintf("w%d", i+1), Concurrency: 4, AckWait: 5 * time.Second})
			}
			c, err := Connect(context.Background(), srv.ClientURL(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			if err := c.Publish(context.Background(), project(b, wf)); err != nil {
				b.Fatal(err)
			}
			measure(b, c, srv)
		})
	}
}

// reportTraffic reports the messages and bytes in and out of srv per
// task since v0: what each task costs the server, whatever the load.
func reportTraffic(b *testing.B, srv *server.Server, v0 *server.Varz, tasks int) {
	v1, _ := srv.Varz(nil)
	b.ReportMetric(float64(v1.InMsgs-v0.InMsgs+v1.OutMsgs-v0.OutMsgs)/float64(tasks), "msgs/task")
	b.ReportMetric(float64(v1.InBytes-v0.InBytes+v1.OutBytes-v0.OutBytes)/float64(tasks), "bytes/task")
}

// reportCPU reports the CPU time per task of this process (the
// coordinator, and the server when it is embedded) and of the worker
// processes: where a task's cost goes as deployed.
func reportCPU(b *testing.B, self, workers time.Duration, tasks int) {
	b.ReportMetric(float64(self.Microseconds())/float64(tasks), "coordinator-cpu-µs/task")
	b.ReportMetric(float64(workers.Microseconds())/float64(tasks), "workers-cpu-µs/task")
}

// procsCPU is the CPU time (user and system) the processes pids have used
// so far, from /proc in clock ticks (100 a second on Linux): a run of a
// few hundred milliseconds a worker is measured within a few percent.
func procsCPU(b *testing.B, pids []int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatal(err)
		}
		// After the command's name in parentheses: state is the first
		// field, utime the 12th and stime the 13th.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		for _, s := range f[11:13] {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			ticks += n
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// cpuTime is the user and system time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
