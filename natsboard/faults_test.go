package natsboard

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fsdrun/fsd/internal/testlong"
	"github.com/fsdrun/fsd/runrecord"
)

// outcome reads the committed outcome of an attempt and how many values
// its key ever had.
func outcome(t *testing.T, url, run, task string, attempt int) (*Outcome, int) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, ResultsBucket)
	if err != nil {
		t.Fatal(err)
	}
	key := ResultKey(run, task, attempt)
	hist, err := kv.History(ctx, key)
	if err != nil {
		t.Fatalf("outcome %s: %v", key, err)
	}
	var out Outcome
	if err := json.Unmarshal(hist[len(hist)-1].Value(), &out); err != nil {
		t.Fatal(err)
	}
	return &out, len(hist)
}

// runID reads the run id from a run record folder's name.
func runID(dir string) string { return filepath.Base(dir) }

// TestWorkerKilledMidTask: the worker running a task is killed (SIGKILL,
// no goodbye); after the ack wait the task goes to another worker and
// completes there, exactly once.
func TestWorkerKilledMidTask(t *testing.T) {
	testlong.Skip(t)
	srv := runServer(t)
	wf := fanout(t, 1, "2s")
	dir := filepath.Dir(wf)
	a := worker(t, srv.ClientURL(), "wa", "--concurrency", "1")
	runs := filepath.Join(dir, "runs")
	run := start(t, dir, nil, "run", wf, "--nats", srv.ClientURL(), "--runs-dir", runs)
	until(t, "worker wa to start t0", func() bool { return started(a.output())["t0"] == 1 })
	a.kill()
	b := worker(t, srv.ClientURL(), "wb", "--concurrency", "1")
	run.wait(t)
	if got := lastLine(run.output()); got != "joined join" {
		t.Errorf("answer %q", got)
	}
	if n := started(b.output())["t0"]; n != 1 {
		t.Errorf("worker wb started t0 %d times, want 1", n)
	}
	out, values := outcome(t, srv.ClientURL(), runID(onlyRun(t, runs)), "t0", 1)
	if out.Worker != "wb" || out.Result != "done t0" || values != 1 {
		t.Errorf("outcome of t0: worker %q result %q, %d values; want wb, done t0, 1", out.Worker, out.Result, values)
	}
	completed := 0
	for _, e := range events(t, onlyRun(t, runs)) {
		if e["type"] == "task.completed" && e["task"] == "t0" {
			completed++
		}
	}
	if completed != 1 {
		t.Errorf("%d task.completed events for t0, want 1", completed)
	}
}

// TestClusterNodeKilled: with a 3-node JetStream cluster (replicas 3), a
// node shut down in the middle of a run does not stop it: clients
// reconnect to the others and the run finishes with every task once.
func TestClusterNodeKilled(t *testing.T) {
	testlong.Skip(t)
	nodes := runCluster(t)
	url := urls(nodes...)
	wf := fanout(t, 16, "300ms")
	dir := filepath.Dir(wf)
	w1 := worker(t, url, "w1", "--concurrency", "2")
	w2 := worker(t, url, "w2", "--concurrency", "2")
	out, err := os.Create(filepath.Join(dir, "events.out"))
	must(t, err)
	defer out.Close()
	run := start(t, dir, out, "run", wf, "--nats", url, "--runs-dir", filepath.Join(dir, "runs"), "--events", "json")
	until(t, "two tasks to complete", func() bool { return countEvents(out.Name(), "task.completed") >= 2 })
	nodes[0].Shutdown()
	run.wait(t)
	if n := countEvents(out.Name(), "task.completed"); n != 17 {
		t.Errorf("%d tasks completed, want 17", n)
	}
	if !strings.Contains(lastLine(readFile(t, out.Name())), `"answer":"joined join"`) {
		t.Errorf("run.finished: %s", lastLine(readFile(t, out.Name())))
	}
	counts := started(w1.output(), w2.output())
	// A task whose outcome was committed runs once; one whose worker lost
	// its connection mid-task may be delivered again, but its outcome is
	// committed once (the run's events say it completed once).
	if len(counts) != 17 {
		t.Errorf("tasks started: %v", counts)
	}
}

// TestCoordinatorKilledResume: the coordinator (fsd run) is killed in the
// middle of a run; fsd resume finishes it: tasks that completed on the
// workers meanwhile are picked up, running ones are not published again,
// and no task runs twice. The workers' transcripts are in the record
// once each, and the resumed run's task.completed says replayed exactly
// for the outcomes the killed coordinator had recorded.
func TestCoordinatorKilledResume(t *testing.T) {
	testlong.Skip(t)
	srv := runServer(t)
	wf := fanout(t, 8, "1s")
	dir := filepath.Dir(wf)
	w1 := worker(t, srv.ClientURL(), "w1", "--concurrency", "2")
	w2 := worker(t, srv.ClientURL(), "w2", "--concurrency", "2")
	runs := filepath.Join(dir, "runs")
	run := start(t, dir, nil, "run", wf, "--nats", srv.ClientURL(), "--runs-dir", runs)
	var rec string
	until(t, "two remote transcripts in the record", func() bool {
		ents, _ := os.ReadDir(runs)
		if len(ents) != 1 {
			return false
		}
		rec = filepath.Join(runs, ents[0].Name())
		return len(transcripts(t, rec)) >= 2
	})
	run.kill()
	before := transcripts(t, rec)
	out, err := os.Create(filepath.Join(dir, "events.out"))
	must(t, err)
	defer out.Close()
	// --nats comes from the record.
	res := start(t, dir, out, "resume", runID(rec), "--runs-dir", runs, "--events", "json")
	res.wait(t)
	if got := lastLine(readFile(t, out.Name())); !strings.Contains(got, `"answer":"joined join"`) {
		t.Errorf("resumed run's end: %s", got)
	}
	counts := started(w1.output(), w2.output())
	if len(counts) != 9 {
		t.Errorf("tasks started: %v; want t0…t7 and join", counts)
	}
	for id, n := range counts {
		if n != 1 {
			t.Errorf("task %s ran %d times", id, n)
		}
	}
	after := transcripts(t, rec)
	if len(after) != 9 {
		t.Errorf("remote transcripts in the record: %v; want t0…t7 and join", after)
	}
	for id, msgs := range after {
		want := "done " + id
		if id == "join" {
			want = "joined join"
		}
		if n := strings.Count(strings.Join(msgs, "\n"), want); n != 1 {
			t.Errorf("task %s: its answer is %d times in its recorded transcript %q", id, n, msgs)
		}
	}
	completed := 0
	sc := bufio.NewScanner(strings.NewReader(readFile(t, out.Name())))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct {
			Type, Task string
			Replayed   bool
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Type != "task.completed" {
			continue
		}
		completed++
		recorded := len(before[e.Task]) > 0 && len(before[e.Task]) == len(after[e.Task])
		if e.Replayed != recorded {
			t.Errorf("task.completed %s replayed=%v; its outcome was recorded before the kill: %v", e.Task, e.Replayed, recorded)
		}
	}
	if completed != 9 {
		t.Errorf("%d task.completed events in the resumed run, want 9", completed)
	}
}

// transcripts reads the task transcripts a run record's journal holds:
// task -> its first attempt's message texts.
func transcripts(t *testing.T, rec string) map[string][]string {
	t.Helper()
	gens, err := runrecord.ReadJournal(filepath.Join(rec, runrecord.JournalFile))
	if err != nil {
		return nil // being written: a torn last line
	}
	out := map[string][]string{}
	for _, g := range gens {
		if g.Gen.Task == "" {
			continue
		}
		for _, e := range g.Entries {
			if e.Message != nil {
				out[g.Gen.Task] = append(out[g.Gen.Task], e.Message.Text)
			}
		}
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	return string(data)
}

var countMu sync.Mutex

// countEvents counts the events of a type in a JSON-lines file.
func countEvents(path, typ string) int {
	countMu.Lock()
	defer countMu.Unlock()
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct{ Type string }
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == typ {
			n++
		}
	}
	return n
}

// TestRedeliveryBoundFailsSoftly: a task whose worker dies more often
// than the message's delivery bound allows fails (softly: the run goes
// on to report it) instead of being delivered forever.
func TestRedeliveryBoundFailsSoftly(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	wf := fanout(t, 1, "1m")
	ctx := context.Background()
	c, err := Connect(ctx, srv.ClientURL(), Options{MaxDeliveries: 1})
	must(t, err)
	defer c.Close()
	must(t, c.Publish(ctx, project(t, wf)))
	a := worker(t, srv.ClientURL(), "wa", "--concurrency", "1")
	type result struct{ err error }
	done := make(chan result, 1)
	go func() {
		_, err := runWorkflow(t, wf, c)
		done <- result{err}
	}()
	until(t, "worker wa to start t0", func() bool { return started(a.output())["t0"] == 1 })
	a.kill()
	b := worker(t, srv.ClientURL(), "wb", "--concurrency", "1")
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not end")
	}
	if r.err == nil || !strings.Contains(r.err.Error(), "task t0 failed: delivered once to workers that stopped before it finished") {
		t.Errorf("run: %v; want t0 failed after one delivery", r.err)
	}
	if n := started(b.output())["t0"]; n != 0 {
		t.Errorf("worker wb ran t0 %d times past the bound", n)
	}
}
