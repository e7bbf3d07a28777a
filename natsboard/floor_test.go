package natsboard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The floor of a remote task: what NATS alone costs for the messages fsd
// sends a task, with nothing of fsd around them. BenchmarkFanout measures
// it beside fsd, so that what fsd adds over NATS, and what NATS costs
// itself, are told apart: the coordinator publishes a task message
// (asynchronously, with a message id, at most 1,024 in flight, as
// Coordinator.Dispatch does) to the task stream and watches the results
// bucket; four worker processes (this test binary, run again with
// floorWorkerEnv) each run four messages at a time (as a worker of
// concurrency 4 does; the client library's Consume asks for up to four
// ahead), create a key in the results bucket per task and ack the
// message. Task messages and outcomes are floorBytes each: the bytes
// through the server per task come within a tenth of the benchmark's own.
//
// With perTask above one, a message carries that many tasks (one key
// each): what batching tasks into messages would save.
const (
	floorWorkerEnv = "FSD_BENCH_FLOOR_WORKER"
	floorSubject   = taskSubjects + ".floor"
	floorBytes     = 1000
)

// floorWorker is a floor worker process's whole life: it pulls from url's
// floor consumer until killed, or until its connection closes for good
// (a benchmark killed before it could kill its workers).
func floorWorker(url string) error {
	closed := make(chan struct{})
	nc, err := nats.Connect(url, nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, ResultsBucket)
	if err != nil {
		return err
	}
	cons, err := js.Consumer(ctx, TaskStream, "floor")
	if err != nil {
		return err
	}
	outcome := []byte(strings.Repeat("o", floorBytes))
	slots := make(chan struct{}, 4)
	_, err = cons.Consume(func(m jetstream.Msg) {
		slots <- struct{}{}
		go func() {
			defer func() { <-slots }()
			for key := range strings.FieldsSeq(m.Headers().Get("Keys")) {
				if _, err := kv.Create(ctx, key, outcome); err != nil {
					fmt.Fprintln(os.Stderr, err)
				}
			}
			_ = m.Ack()
		}()
	}, jetstream.PullMaxMessages(4))
	if err != nil {
		return err
	}
	<-closed
	return errors.New("floor worker: connection to the server closed")
}

// benchFloor runs n tasks perTask to a message through the floor, once
// per b.Loop, and reports the time per task.
func benchFloor(b *testing.B, n, perTask int) {
	srv := runServer(b)
	ctx := context.Background()
	// The coordinator makes the stream and the bucket as fsd makes them.
	c, err := Connect(ctx, srv.ClientURL(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(1024))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, TaskStream, jetstream.ConsumerConfig{
		Durable: "floor", FilterSubject: floorSubject, AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 10000,
	}); err != nil {
		b.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, ResultsBucket)
	if err != nil {
		b.Fatal(err)
	}
	var workers []int
	for range 4 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), floorWorkerEnv+"="+srv.ClientURL())
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		workers = append(workers, cmd.Process.Pid)
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	task := []byte(strings.Repeat("t", floorBytes))
	round := 0
	run := func() {
		round++
		w, err := kv.WatchAll(ctx, jetstream.UpdatesOnly())
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = w.Stop() }()
		var keys strings.Builder
		for i := 0; i < n; i += perTask {
			keys.Reset()
			for j := i; j < min(i+perTask, n); j++ {
				fmt.Fprintf(&keys, "floor.%d.%d ", round, j)
			}
			m := nats.NewMsg(floorSubject)
			m.Data = task
			m.Header.Set("Keys", keys.String())
			m.Header.Set(jetstream.MsgIDHeader, "floor."+strconv.Itoa(round)+"."+strconv.Itoa(i))
			if _, err := js.PublishMsgAsync(m); err != nil {
				b.Fatal(err)
			}
		}
		deadline := time.After(time.Minute)
		for got := 0; got < n; {
			select {
			case e := <-w.Updates():
				if e != nil {
					got++
				}
			case <-deadline:
				b.Fatalf("%d of %d outcomes in a minute", got, n)
			}
		}
	}
	run() // the workers' first pulls, as the fsd pools' first run
	runs := 0
	v0, _ := srv.Varz(nil)
	cpu0, wcpu0 := cpuTime(), procsCPU(b, workers)
	start := time.Now()
	for b.Loop() {
		run()
		runs++
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(runs*n), "µs/task")
	reportCPU(b, cpuTime()-cpu0, procsCPU(b, workers)-wcpu0, runs*n)
	reportTraffic(b, srv, v0, runs*n)
}
