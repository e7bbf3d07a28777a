package natsboard

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/internal/syncbuf"
	"github.com/fsdrun/fsd/model"
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
