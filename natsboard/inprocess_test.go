package natsboard

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/scripted"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/work"
)

// scriptedModel builds the worker-side model the way fsd worker does.
func scriptedModel(name, script string) (model.Model, error) {
	s, err := scripted.Load(script)
	if err != nil {
		return nil, err
	}
	return scripted.New(s, nil), nil
}

// runLocal runs a workflow in this process, with dispatcher d (nil: the
// in-process board), and returns its answer.
func runLocal(t *testing.T, wf string, d work.Dispatcher, runsDir string) *engine.Result {
	t.Helper()
	res, err := runWorkflowIn(t, wf, d, runsDir)
	if err != nil {
		t.Fatalf("run %s: %v", wf, err)
	}
	return res
}

// runWorkflow runs a workflow with dispatcher d and no record.
func runWorkflow(t *testing.T, wf string, d work.Dispatcher) (*engine.Result, error) {
	return runWorkflowIn(t, wf, d, "")
}

func runWorkflowIn(t testing.TB, wf string, d work.Dispatcher, runsDir string) (*engine.Result, error) {
	t.Helper()
	p, diags := spec.LoadProject(wf)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	s, err := scripted.Load(filepath.Join(p.Workflow.Dir, p.Workflow.Script))
	if err != nil {
		t.Fatal(err)
	}
	var seed [32]byte
	r, err := engine.New(p, engine.Options{Model: scripted.New(s, nil), Dispatcher: d, RunsDir: runsDir, Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return r.Execute(ctx, "")
}

// TestInProcessPipelineSameAnswer: the example pipeline (command tools,
// flow, conversation supply, five agents over two skills) gives the same
// answer through NATS as on the in-process board.
func TestInProcessPipelineSameAnswer(t *testing.T) {
	t.Parallel()
	wf := filepath.Join("..", "examples", "pipeline.workflow.yaml")
	local := runLocal(t, wf, nil, t.TempDir())

	srv := runServer(t)
	ctx := context.Background()
	c, err := Connect(ctx, srv.ClientURL(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, _ := spec.LoadProject(wf)
	if err := c.Publish(ctx, p); err != nil {
		t.Fatal(err)
	}
	serve(t, srv.ClientURL(), WorkerOptions{Work: engine.Work, Name: "w1", Trust: []string{filepath.Join("..", "examples", "skills")}, AckWait: 2 * time.Second})

	remote := runLocal(t, wf, c, t.TempDir())
	if remote.Answer != local.Answer {
		t.Errorf("answer through NATS:\n%s\nin process:\n%s", remote.Answer, local.Answer)
	}
	want, got := boardResults(t, local.Dir), boardResults(t, remote.Dir)
	if len(want) != 5 {
		t.Fatalf("in-process board: %v", want)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("task %s through NATS: %q; in process: %q", id, got[id], w)
		}
	}
}

// boardResults reads a run record's board.json: task id -> status and
// result (or error).
func boardResults(t *testing.T, dir string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "board.json"))
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Tasks []struct{ ID, Status, Result, Error string }
	}
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tk := range b.Tasks {
		out[tk.ID] = tk.Status + ": " + tk.Result + tk.Error
	}
	return out
}

// project loads a workflow's project.
func project(t testing.TB, wf string) *spec.Project {
	t.Helper()
	p, diags := spec.LoadProject(wf)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	return p
}
