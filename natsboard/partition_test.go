package natsboard

// Partition tests: the network between a worker (or the coordinator) and
// the NATS server misbehaves, through netProxy, while a run goes on.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/internal/syncbuf"
	"github.com/fsdrun/fsd/internal/testlong"
	"github.com/fsdrun/fsd/work"
)

// completions counts a run record's task.completed events by task.
func completions(t *testing.T, runDir string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, e := range events(t, runDir) {
		if e["type"] == "task.completed" {
			task, _ := e["task"].(string)
			n[task]++
		}
	}
	return n
}

// TestWorkerPartitionedMidTask: the worker running a task is cut off
// without its connection closing (a stall longer than the ack wait); the
// task goes to another worker and its outcome is committed once, by that
// worker. When the network comes back the partitioned worker's late
// commit is refused (wb's outcome stays), and it goes on taking tasks.
func TestWorkerPartitionedMidTask(t *testing.T) {
	testlong.Skip(t)
	srv := runServer(t)
	p := newProxy(t, srv.Addr().String())
	wf := fanout(t, 1, "3s")
	dir := filepath.Dir(wf)
	a := worker(t, p.url(), "wa", "--concurrency", "1")
	runs := filepath.Join(dir, "runs")
	run := start(t, dir, nil, "run", wf, "--nats", srv.ClientURL(), "--runs-dir", runs)
	until(t, "worker wa to start t0", func() bool { return started(a.output())["t0"] == 1 })
	p.stall()
	b := worker(t, srv.ClientURL(), "wb", "--concurrency", "1")
	var id string
	until(t, "worker wb to commit t0", func() bool {
		ents, _ := filepath.Glob(filepath.Join(runs, "*"))
		if len(ents) != 1 {
			return false
		}
		id = filepath.Base(ents[0])
		out, err := readOutcome(srv.ClientURL(), id, "t0", 1)
		return err == nil && out.Worker == "wb"
	})
	p.restore()
	run.wait(t)
	if got := lastLine(run.output()); got != "joined join" {
		t.Errorf("answer %q", got)
	}
	// wa's late commit: its create finds wb's outcome (it says it
	// discards its own; its heartbeat may have found wb's first and
	// stopped its run, which commits all the same) — or, were outcomes
	// overwritten, replaces it. Either is seen before the outcome is read.
	until(t, "worker wa to commit its late t0", func() bool {
		out, err := readOutcome(srv.ClientURL(), id, "t0", 1)
		return strings.Contains(a.output(), "outcome is discarded") || err == nil && out.Worker != "wb"
	})
	out, values := outcome(t, srv.ClientURL(), id, "t0", 1)
	if out.Worker != "wb" || out.Result != "done t0" || values != 1 {
		t.Errorf("outcome of t0 after wa's late commit: worker %q result %q, %d values; want wb, done t0, 1", out.Worker, out.Result, values)
	}
	if got := completions(t, onlyRun(t, runs)); got["t0"] != 1 || got["join"] != 1 {
		t.Errorf("task.completed events by task: %v; want t0 and join once", got)
	}
	// wa then serves the next run alone.
	b.kill()
	runs2 := filepath.Join(dir, "runs2")
	run2 := start(t, dir, nil, "run", wf, "--nats", srv.ClientURL(), "--runs-dir", runs2)
	run2.wait(t)
	if got := lastLine(run2.output()); got != "joined join" {
		t.Errorf("second run's answer %q", got)
	}
	if got := started(a.output()); got["join"] != 1 {
		t.Errorf("worker wa started %v; want the second run's join too", got)
	}
}

// TestCoordinatorPartitioned: the coordinator (fsd run) is cut off from
// NATS for a while in the middle of a run, first by a stall its TCP
// connection does not notice, then by a cut; the workers go on, and once
// the network is back the run finishes with the right answer and every
// task completed once in its record. (The run has more tasks than its
// concurrency, so the coordinator publishes tasks as others complete.)
func TestCoordinatorPartitioned(t *testing.T) {
	testlong.Skip(t)
	srv := runServer(t)
	p := newProxy(t, srv.Addr().String())
	wf := fanout(t, 20, "1s")
	dir := filepath.Dir(wf)
	worker(t, srv.ClientURL(), "w1", "--concurrency", "1")
	worker(t, srv.ClientURL(), "w2", "--concurrency", "1")
	out, err := os.Create(filepath.Join(dir, "events.out"))
	must(t, err)
	defer out.Close()
	runs := filepath.Join(dir, "runs")
	run := start(t, dir, out, "run", wf, "--nats", p.url(), "--runs-dir", runs, "--events", "json")
	completed := func() int { return countEvents(out.Name(), "task.completed") }
	until(t, "a task to complete", func() bool { return completed() >= 1 })
	p.stall()
	time.Sleep(6 * time.Second) // past a request's timeout (5 s) and the result watch's heartbeats
	p.restore()
	n := completed()
	until(t, "a task to complete after the stall", func() bool { return completed() > n })
	p.cut()
	time.Sleep(2 * time.Second)
	p.restore()
	run.wait(t)
	if !strings.Contains(lastLine(readFile(t, out.Name())), `"answer":"joined join"`) {
		t.Errorf("run.finished: %s", lastLine(readFile(t, out.Name())))
	}
	if o := run.output(); !strings.Contains(o, "lost the connection to NATS") || !strings.Contains(o, "reconnected to NATS") {
		t.Errorf("fsd run's stderr does not say the connection was lost and came back:\n%s", o)
	}
	got := completions(t, onlyRun(t, runs))
	if len(got) != 21 {
		t.Errorf("tasks completed: %v; want t0…t19 and join", got)
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("task %s completed %d times", id, n)
		}
	}
}

// clientGoroutines counts this process's goroutines that run NATS client
// or worker code (the embedded server's and the proxy's are not), and
// returns their stacks.
func clientGoroutines() (int, string) {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	var keep []string
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "nats-io/nats.go") || strings.Contains(g, "natsboard.(*Worker)") || strings.Contains(g, "fsd/engine.") {
			keep = append(keep, g)
		}
	}
	return len(keep), strings.Join(keep, "\n\n")
}

// TestWorkerConnectionFlaps: the connection of a worker (in this process,
// so its goroutines can be counted) is cut five times during a run, some
// cuts shorter and some longer than the ack wait. No task is lost and
// none completes twice; the worker runs every task itself (it is the only
// one), and once idle it runs no more client goroutines than it did
// before the cuts, after a run of the same workflow.
func TestWorkerConnectionFlaps(t *testing.T) {
	testlong.Skip(t)
	srv := runServer(t)
	p := newProxy(t, srv.Addr().String())
	wf := fanout(t, 12, "500ms")
	dir := filepath.Dir(wf)
	(&natsFixture{url: p.url()}).startWorker(t, WorkerOptions{Work: engine.Work, Name: "wf", Concurrency: 2})
	warm := start(t, dir, nil, "run", wf, "--nats", srv.ClientURL(), "--runs-dir", filepath.Join(dir, "warm"))
	warm.wait(t)
	// The fewest seen while idle: goroutines of the last task may still
	// be ending.
	before := -1
	for range 20 {
		if n, _ := clientGoroutines(); before < 0 || n < before {
			before = n
		}
		time.Sleep(100 * time.Millisecond)
	}

	out, err := os.Create(filepath.Join(dir, "events.out"))
	must(t, err)
	defer out.Close()
	runs := filepath.Join(dir, "runs")
	run := start(t, dir, out, "run", wf, "--nats", srv.ClientURL(), "--runs-dir", runs, "--events", "json")
	completed := func() int { return countEvents(out.Name(), "task.completed") }
	for i := range 5 {
		n := completed()
		until(t, "a task to complete", func() bool { return completed() > n })
		p.cut()
		// Short cuts the task rides out; long ones (past the 1 s ack
		// wait) send it to be delivered again.
		time.Sleep([]time.Duration{200 * time.Millisecond, 1500 * time.Millisecond}[i%2])
		p.restore()
	}
	run.wait(t)
	if !strings.Contains(lastLine(readFile(t, out.Name())), `"answer":"joined join"`) {
		t.Errorf("run.finished: %s", lastLine(readFile(t, out.Name())))
	}
	got := completions(t, onlyRun(t, runs))
	if len(got) != 13 {
		t.Errorf("tasks completed: %v; want t0…t11 and join", got)
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("task %s completed %d times", id, n)
		}
	}
	var after int
	var stacks string
	for range 150 {
		if after, stacks = clientGoroutines(); after <= before {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("the idle worker runs %d client goroutines after the cuts, %d before:\n%s", after, before, stacks)
}

// TestPartitionedWorkerStoppedKeepsOffTask: a worker cut off mid-task
// past the ack wait, whose task another worker has taken, is stopped
// (SIGTERM) before the network comes back. Its lease ran out, so it does
// not hand the task back: its late "give it to someone else" would reach
// the server once the network is back and send the task, which the other
// worker is running, to a third delivery.
func TestPartitionedWorkerStoppedKeepsOffTask(t *testing.T) {
	testlong.Skip(t)
	srv := runServer(t)
	p := newProxy(t, srv.Addr().String())
	wf := fanout(t, 1, "4s")
	dir := filepath.Dir(wf)
	a := worker(t, p.url(), "wa", "--concurrency", "1")
	runs := filepath.Join(dir, "runs")
	run := start(t, dir, nil, "run", wf, "--nats", srv.ClientURL(), "--runs-dir", runs)
	until(t, "worker wa to start t0", func() bool { return started(a.output())["t0"] == 1 })
	p.stall()
	// Two slots: a third delivery would find one free.
	b := worker(t, srv.ClientURL(), "wb", "--concurrency", "2")
	until(t, "worker wb to start t0", func() bool { return started(b.output())["t0"] == 1 })
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	until(t, "worker wa to stop its task", func() bool { return strings.Contains(a.output(), "worker stopped") })
	p.restore()
	run.wait(t)
	if got := lastLine(run.output()); got != "joined join" {
		t.Errorf("answer %q", got)
	}
	if n := started(b.output())["t0"]; n != 1 {
		t.Errorf("worker wb started t0 %d times, want 1", n)
	}
	if got := completions(t, onlyRun(t, runs)); got["t0"] != 1 {
		t.Errorf("task.completed events by task: %v; want t0 once", got)
	}
}

// TestKeepTryingOutlastsRetry: a task the coordinator cannot publish for
// now is published again for as long as it takes (here past the ten
// tries retry gives other requests), saying so once after 5 s and again
// when it is out; an error that is not transient, or the run's end, stops
// it at once.
func TestKeepTryingOutlastsRetry(t *testing.T) {
	testlong.Skip(t)
	var logged bytes.Buffer
	log := zerolog.New(&logged)
	calls := 0
	err := keepTrying(context.Background(), log, "publish the task to NATS", func() error {
		if calls++; calls <= 11 {
			return nats.ErrTimeout
		}
		return nil
	})
	if err != nil || calls != 12 {
		t.Errorf("keepTrying: %v after %d calls; want success at the 12th", err, calls)
	}
	if n := strings.Count(logged.String(), "cannot publish the task to NATS for now"); n != 1 || !strings.Contains(logged.String(), "could publish the task to NATS after all") {
		t.Errorf("said %d times that it cannot publish; log:\n%s", n, logged.String())
	}

	calls = 0
	err = keepTrying(context.Background(), log, "publish the task to NATS", func() error { calls++; return nats.ErrMaxPayload })
	if !errors.Is(err, nats.ErrMaxPayload) || calls != 1 {
		t.Errorf("a lasting error: %v after %d calls; want it at once", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	err = keepTrying(ctx, log, "publish the task to NATS", func() error {
		if calls++; calls == 3 {
			cancel()
		}
		return nats.ErrTimeout
	})
	if err == nil || calls != 3 {
		t.Errorf("the run ended: %v after %d calls; want an error at the 3rd", err, calls)
	}
}

// TestPublishOutlastsNoStream: a publish no stream answers (a cluster
// electing the stream's leader after losing a node; the client gives up
// after two quick tries with ErrNoStreamResponse) is tried again, as a
// lost connection is, and gets through once a stream answers; it failed
// the task at once ("publish: no response from stream", seen in
// TestClusterNodeKilled under load).
func TestPublishOutlastsNoStream(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	r, err := connect(context.Background(), srv.ClientURL(), dialing{name: "test", replicas: 1, log: zerolog.Nop()})
	must(t, err)
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var once sync.Once
	made := make(chan error, 1)
	calls := 0
	err = keepTrying(ctx, zerolog.Nop(), "publish the task to NATS", func() error {
		calls++
		_, err := r.js.Publish(ctx, "fsd-test-nostream.x", []byte("x"))
		if err != nil {
			once.Do(func() {
				go func() {
					_, err := r.js.CreateStream(ctx, jetstream.StreamConfig{Name: "NOSTREAM", Subjects: []string{"fsd-test-nostream.>"}})
					made <- err
				}()
			})
		}
		return err
	})
	if err != nil {
		t.Fatalf("publish with no stream for a moment: %v after %d calls; want it through once the stream is there", err, calls)
	}
	must(t, <-made)
	if calls < 2 {
		t.Errorf("%d calls: the first had a stream to answer it, the test proves nothing", calls)
	}
}

// TestNATSClientErrorsLogged: what the NATS client reports out of band (a
// slow consumer here) goes to fsd's log, not to stderr as a raw line (the
// client's default handler writes "nats: slow consumer, messages dropped
// on connection [n] for subscription on "slow"" there). The test holds
// the process's stderr, so it does not run in parallel.
func TestNATSClientErrorsLogged(t *testing.T) {
	srv := runServer(t)
	stderr, err := os.CreateTemp(t.TempDir(), "stderr")
	must(t, err)
	defer stderr.Close()
	saved := os.Stderr
	os.Stderr = stderr
	defer func() { os.Stderr = saved }()
	var logged syncbuf.Buffer
	r, err := connect(context.Background(), srv.ClientURL(), dialing{name: "test", replicas: 1, log: zerolog.New(&logged)})
	must(t, err)
	defer r.Close()
	block := make(chan struct{})
	defer close(block)
	sub, err := r.nc.Subscribe("slow", func(*nats.Msg) { <-block })
	must(t, err)
	must(t, sub.SetPendingLimits(1, -1))
	for range 5 {
		must(t, r.nc.Publish("slow", []byte("x")))
	}
	must(t, r.nc.Flush())
	until(t, "the slow consumer to be logged", func() bool {
		return strings.Contains(logged.String(), "slow consumer") && strings.Contains(logged.String(), `"subject":"slow"`)
	})
	// The client runs its handlers one after another: once the closed
	// handler has run, the error handler has returned, whatever it wrote.
	closed := make(chan struct{})
	r.nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	r.nc.Close()
	select {
	case <-closed:
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		t.Fatal("the connection's closed handler did not run")
	}
	os.Stderr = saved
	b, err := os.ReadFile(stderr.Name())
	must(t, err)
	if strings.Contains(string(b), "slow consumer") {
		t.Errorf("the NATS client wrote to stderr:\n%s", b)
	}
	var line struct{ Level, Subject, Error, Message string }
	for _, l := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
		if strings.Contains(l, "slow consumer") {
			must(t, json.Unmarshal([]byte(l), &line))
			break
		}
	}
	if line.Level != "warn" || line.Subject != "slow" || line.Message != "NATS client" || !strings.Contains(line.Error, "slow consumer") {
		t.Errorf("log line %+v; want a warning from the NATS client naming the slow consumer on subject slow\n%s", line, logged.String())
	}
}

// TestCoordinatorCutOffAtStart: a coordinator cut off from NATS when it
// dispatches a run's first task, for longer than a request's timeout,
// starts the run's results watch and publishes the task once the network
// is back, and gets the outcome.
func TestCoordinatorCutOffAtStart(t *testing.T) {
	testlong.Skip(t)
	srv := runServer(t)
	p := newProxy(t, srv.Addr().String())
	wf := fanout(t, 1, "")
	var logged syncbuf.Buffer
	c, err := Connect(context.Background(), p.url(), Options{Logger: zerolog.New(&logged)})
	must(t, err)
	t.Cleanup(c.Close)
	must(t, c.Publish(context.Background(), project(t, wf)))
	(&natsFixture{url: srv.ClientURL()}).startWorker(t, WorkerOptions{Work: engine.Work, Name: "w1"})
	p.cut()
	type result struct {
		res *work.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := c.Dispatch(context.Background(), &work.Attempt{Run: "cut", Task: "t0", Number: 1, Goal: "task 0",
			Skill: "fan", Agent: "worker", Assignee: "fan/worker", Limits: work.Limits{MaxSteps: 2, MaxTranscriptMessages: 100}}, nil, nil)
		done <- result{res, err}
	}()
	// keepTrying says so once its requests have failed for 5 s: the cut
	// has outlasted a request's timeout.
	until(t, "the coordinator to say it cannot watch the run's results for now", func() bool {
		return strings.Contains(logged.String(), "cannot watch the run's results in NATS for now")
	})
	p.restore()
	select {
	case r := <-done:
		if r.err != nil || r.res.Result != "done t0" {
			t.Errorf("dispatch across the cut: %+v, %v; want done t0", r.res, r.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the dispatch did not end")
	}
}

// TestStoppedWorkerHandsBackWithShortAckWait: a worker with a short ack
// wait (1 s, shorter than a fetch's wait) that is stopped mid-task hands
// every task back at once: its lease on a delivery that came late in a
// fetch is still held, not taken as run out.
func TestStoppedWorkerHandsBackWithShortAckWait(t *testing.T) {
	testlong.Skip(t)
	srv := runServer(t)
	wf := fanout(t, 3, "3s")
	dir := filepath.Dir(wf)
	a := worker(t, srv.ClientURL(), "wa", "--concurrency", "3")
	// Its pull for its free slots (one request for all three, U6) is
	// waiting when the tasks come, at some point of its wait.
	r := testJS(t, srv.ClientURL())
	until(t, "worker wa's pull to wait on its queue", func() bool {
		ci, err := r.js.Consumer(context.Background(), TaskStream, consumerName(">"))
		if err != nil {
			return false
		}
		info, err := ci.Info(context.Background())
		return err == nil && info.NumWaiting >= 1
	})
	run := start(t, dir, nil, "run", wf, "--nats", srv.ClientURL(), "--runs-dir", filepath.Join(dir, "runs"))
	until(t, "worker wa to start three tasks", func() bool { return len(started(a.output())) == 3 })
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	until(t, "worker wa to stop", func() bool { return strings.Contains(a.output(), "worker stopped") })
	if !strings.Contains(a.output(), "3 tasks handed back") {
		t.Errorf("worker wa did not hand its three tasks back:\n%s", a.output())
	}
	worker(t, srv.ClientURL(), "wb", "--concurrency", "3")
	run.wait(t)
}
