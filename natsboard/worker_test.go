package natsboard

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/engine"
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
