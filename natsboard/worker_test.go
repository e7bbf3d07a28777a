package natsboard

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/internal/syncbuf"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/work"
)

// TestWorkerModelErrorSaysWhere: a worker that cannot build the task's
// model (no API key in its environment, an unknown provider) fails the
// task saying which worker, and names the model once: the user exported
// the key where they ran fsd run, and the message must not send them there.
func TestWorkerModelErrorSaysWhere(t *testing.T) {
	t.Parallel()
	wf := fanout(t, 1, "")
	f := newFixture(t, wf)
	f.startWorker(t, WorkerOptions{Work: engine.Work, Name: "w1", Model: func(name, _ string) (model.Model, error) {
		return nil, fmt.Errorf("model %s: ANTHROPIC_API_KEY is not set; export your API key", name)
	}})
	_, err := runWorkflow(t, wf, f.c)
	if err == nil {
		t.Fatal("the run succeeded without a model")
	}
	if want := "on worker w1: model scripted: ANTHROPIC_API_KEY is not set"; !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "model scripted: model scripted") {
		t.Errorf("run error %q; want it to say %q, naming the model once", err, want)
	}
}

// TestOtherWireVersionFailsTask: a task message of a wire version this
// worker cannot read (a coordinator of another fsd version) fails its
// task saying so, where it was dropped and the run waited for good.
func TestOtherWireVersionFailsTask(t *testing.T) {
	t.Parallel()
	wf := fanout(t, 1, "")
	f := newFixture(t, wf)
	f.startWorker(t, WorkerOptions{Work: engine.Work, Name: "w1"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ready, _ := mustWatch(t, f.c, "r1").wait(ResultKey("r1", "t0", 1))
	// With the outcome key its coordinator gives every attempt: the
	// worker's refusal is authenticated as any outcome is.
	data, err := json.Marshal(map[string]any{"v": WireVersion + 1, "run": "r1", "task": "t0", "attempt": 1, "max-deliveries": 1,
		"outcome-key": outcomeKey(f.c.opts.Key, ResultKey("r1", "t0", 1))})
	must(t, err)
	_, err = f.c.res.js.Publish(ctx, taskSubject("", ""), data)
	must(t, err)
	select {
	case out := <-ready:
		if want := fmt.Sprintf("wire version %d", WireVersion+1); !strings.Contains(out.Error, want) || !strings.Contains(out.Error, "w1") {
			t.Errorf("outcome error %q; want it to name %q and the worker", out.Error, want)
		}
	case <-ctx.Done():
		t.Fatal("no outcome: the task message was dropped")
	}
}

func mustWatch(t *testing.T, c *Coordinator, run string) *runWatch {
	t.Helper()
	w, err := c.watch(context.Background(), run)
	must(t, err)
	return w
}

// TestWorkerLogsNameTask: what a worker logs while it handles a task
// names the task's run, task and attempt, as a logger with those fields
// of its own would; the fields are added only to what is logged (U23).
func TestWorkerLogsNameTask(t *testing.T) {
	t.Parallel()
	wf := fanout(t, 1, "")
	f := newFixture(t, wf)
	var logged syncbuf.Buffer
	f.startWorker(t, WorkerOptions{Work: engine.Work, Name: "w1", Logger: zerolog.New(&logged).Level(zerolog.DebugLevel)})
	res, err := runWorkflow(t, wf, f.c)
	must(t, err)
	started := map[string]bool{}
	for line := range strings.Lines(logged.String()) {
		var e struct {
			Run, Task, Message string
			Attempt            int
		}
		must(t, json.Unmarshal([]byte(line), &e))
		if e.Message != "task started" {
			continue
		}
		started[e.Task] = true
		if e.Run != res.RunID || e.Attempt != 1 {
			t.Errorf("logged %s; want run %q, attempt 1", line, res.RunID)
		}
	}
	if !started["t0"] || !started["join"] {
		t.Errorf("\"task started\" logged for %v; want t0 and join:\n%s", started, logged.String())
	}
}

// TestHeartbeatsKeepTheirPeriod checks that the next heartbeat is due a
// period after the last one started, not after it ended: its requests
// may take two periods, and waiting a whole period more would leave a
// full ack wait between two heartbeats (N6).
func TestHeartbeatsKeepTheirPeriod(t *testing.T) {
	h := &heartbeats{period: time.Minute}
	now := time.Now()
	if d := h.next(now.Add(-2 * time.Minute)); d != 0 {
		t.Errorf("after a heartbeat of two periods the next waits %v; want 0", d)
	}
	if d := h.next(now.Add(-20 * time.Second)); d > 40*time.Second || d < 39*time.Second {
		t.Errorf("after a heartbeat of 20s the next waits %v; want 40s", d)
	}
}

// TestKeptKeysOwnTheirStrings checks that what a worker keeps for its
// life (memo and model keys) does not share memory with a task message:
// a key's strings may be pieces of one (U23), which would stay in memory
// as long as the key.
func TestKeptKeysOwnTheirStrings(t *testing.T) {
	msg := strings.Repeat("x", 1<<16) + `digest"name`
	digest, name := msg[1<<16:1<<16+6], msg[1<<16+7:]
	inside := func(s string) bool {
		p, start := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(msg)))
		return p >= start && p < start+uintptr(len(msg))
	}
	var c memo[fetchKey, string]
	if _, err := c.get(fetchKey{digest: digest, name: name}, func() (string, error) { return "/cache/path", nil }); err != nil {
		t.Fatal(err)
	}
	for k := range c.m {
		if inside(k.digest) || inside(k.name) {
			t.Errorf("kept key %+v shares the message's memory", k)
		}
	}
	w := &Worker{models: map[modelKey]model.Model{}, opts: WorkerOptions{Model: func(string, string) (model.Model, error) { return nil, nil }}}
	if _, err := w.model(context.Background(), &Message{Attempt: work.Attempt{Model: name}}); err != nil {
		t.Fatal(err)
	}
	for k := range w.models {
		if inside(k.name) {
			t.Errorf("kept model key %+v shares the message's memory", k)
		}
	}
}
