package natsboard

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/model"
)

// TestWorkerModelErrorSaysWhere: a worker that cannot build the task's
// model (no API key in its environment, an unknown provider) fails the
// task saying which worker, and names the model once: the user exported
// the key where they ran fsd run, and the message must not send them there.
func TestWorkerModelErrorSaysWhere(t *testing.T) {
	wf := fanout(t, 1, "")
	f := newFixture(t, wf)
	f.startWorker(t, WorkerOptions{Name: "w1", Model: func(name, _ string) (model.Model, error) {
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
