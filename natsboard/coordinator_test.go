package natsboard

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/work"
)

// TestResumedWatchHoldsNoOutcomes: a resumed coordinator's watch reads
// every outcome its run committed so far, most of them tasks its record
// already holds and that it never dispatches again. It keeps their keys,
// not their results and transcripts: a large run's outcomes would all
// stay in memory for the run's life. An outcome asked for later is still
// returned without publishing the task again.
func TestResumedWatchHoldsNoOutcomes(t *testing.T) {
	t.Parallel()
	// Every allocation sampled: what the watch keeps is counted exactly,
	// apart from the embedded server's own memory.
	rate := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = rate }()

	srv := runServer(t)
	ctx := context.Background()
	r := testJS(t, srv.ClientURL())
	const n, size = 16, 64 << 10
	entry, _ := json.Marshal(map[string]any{"seq": 0, "text": strings.Repeat("x", size)})
	for i := range n {
		out := Outcome{V: WireVersion, Outcome: work.Outcome{Result: fmt.Sprintf("result %d", i),
			Logged: 1, Log: []json.RawMessage{entry}}}
		data, err := json.Marshal(out)
		must(t, err)
		k := ResultKey("big", fmt.Sprintf("t%d", i), 1)
		_, err = r.results.Create(ctx, k, signedOutcome(testKey, k, data))
		must(t, err)
	}
	c, err := Connect(ctx, srv.ClientURL(), Options{Key: testKey})
	must(t, err)
	defer c.Close()
	if _, err := c.watch(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	if held := heldBy("natsboard.(*runWatch)"); held > size {
		t.Errorf("the watch of a run with %d outcomes of %d KiB holds %d KiB", n, size>>10, held>>10)
	}

	// t7's message was never published: a publish would wait for a worker.
	res, err := c.Dispatch(ctx, &work.Attempt{Run: "big", Task: "t7", Number: 1, Goal: "g"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result != "result 7" || len(res.Log) != 1 || len(res.Log[0]) != len(entry) {
		t.Errorf("t7's outcome: result %q, %d journal entries", res.Result, len(res.Log))
	}
}

// TestUnreadableOutcomeFailsTask: an outcome that cannot be read (not
// one fsd wrote) is committed all the same, so nothing else will come for
// its attempt: the task fails saying so instead of waiting for good,
// whether it was there before the coordinator asked or came after.
func TestUnreadableOutcomeFailsTask(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	r := testJS(t, srv.ClientURL())
	c, err := Connect(context.Background(), srv.ClientURL(), Options{Key: testKey})
	must(t, err)
	defer c.Close()
	for _, before := range []bool{true, false} {
		task := fmt.Sprintf("before-%v", before)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		commit := func() error {
			// Authenticated, as a worker commits it, but not JSON.
			k := ResultKey("garbled", task, 1)
			_, err := r.results.Create(ctx, k, signedOutcome(testKey, k, []byte("{not json")))
			return err
		}
		committed := make(chan error, 1)
		if before {
			committed <- commit()
		} else {
			// Once the task message is on the queue, its Dispatch waits.
			go func() {
				for ctx.Err() == nil {
					if info, err := r.tasks.Info(ctx); err == nil && info.State.Msgs > 0 {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				committed <- commit()
			}()
		}
		res, err := c.Dispatch(ctx, &work.Attempt{Run: "garbled", Task: task, Number: 1, Goal: "g"}, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", task, err)
		}
		// The watch may bring the outcome before the commit's ack.
		must(t, <-committed)
		if !strings.Contains(res.Error, "is not readable") {
			t.Errorf("%s: error %q", task, res.Error)
		}
	}
}

// heldBy is how many bytes allocated under functions whose name contains
// fn are still in use, as the memory profile counts them.
func heldBy(fn string) int64 {
	// The profile is as of the last collections.
	for range 3 {
		runtime.GC()
	}
	n, _ := runtime.MemProfile(nil, false)
	recs := make([]runtime.MemProfileRecord, n+64)
	n, _ = runtime.MemProfile(recs, false)
	var held int64
	for _, r := range recs[:n] {
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			if strings.Contains(f.Function, fn) {
				held += r.InUseBytes()
				break
			}
			if !more {
				break
			}
		}
	}
	return held
}

// TestWatchRestartsWhenConsumerLost: the results watch's consumer is gone
// (the server holding it went down, here it is deleted) while a Dispatch
// waits. The client library would re-create it only after missing two
// heartbeat checks (10 to 20 s); the coordinator sees that the bucket
// holds an outcome its watch has not delivered and watches again from
// its last revision, and the waiting Dispatch gets the outcome.
//
// It sets watchProbe, which every coordinator reads, so it does not run
// in parallel: a test that does not call t.Parallel ends before any
// parallel one starts.
func TestWatchRestartsWhenConsumerLost(t *testing.T) {
	probe := watchProbe
	watchProbe = 200 * time.Millisecond
	defer func() { watchProbe = probe }()
	srv := runServer(t)
	r := testJS(t, srv.ClientURL())
	c, err := Connect(context.Background(), srv.ClientURL(), Options{Key: testKey})
	must(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		res *work.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := c.Dispatch(ctx, &work.Attempt{Run: "lost", Task: "t", Number: 1, Goal: "g"}, nil, nil)
		done <- result{res, err}
	}()
	for ctx.Err() == nil { // Dispatch waits once its task is on the queue
		if info, err := r.tasks.Info(ctx); err == nil && info.State.Msgs > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	s, err := r.js.Stream(ctx, "KV_"+ResultsBucket)
	must(t, err)
	names := s.ConsumerNames(ctx)
	for name := range names.Name() {
		must(t, s.DeleteConsumer(ctx, name))
	}
	must(t, names.Err())
	data, _ := json.Marshal(Outcome{V: WireVersion, Outcome: work.Outcome{Result: "after the loss"}})
	_, err = r.results.Create(ctx, ResultKey("lost", "t", 1), signedOutcome(testKey, ResultKey("lost", "t", 1), data))
	must(t, err)
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.res.Result != "after the loss" {
		t.Errorf("result %q", got.res.Result)
	}
	c.mu.Lock()
	w := c.watches["lost"]
	c.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.restarts == 0 {
		t.Error("the outcome came without the watch being restarted: was its consumer deleted?")
	}
}
