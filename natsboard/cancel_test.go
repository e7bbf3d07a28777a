package natsboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/work"
)

// napProject writes a skill whose agent napper has a command tool nap
// that creates marker and then sleeps ten minutes, and a workflow using
// it; it returns the workflow's path.
func napProject(t *testing.T, marker string) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "skills", "sleeper"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "skills", "sleeper", "sleeper.skill.yaml"), []byte(fmt.Sprintf(`id: sleeper
name: Sleeper
description: Naps for a long time; a test skill.
version: 1.0.0
instructions: Nap.
tools:
  - name: nap
    description: Sleeps ten minutes.
    run: {command: [sh, -c, "touch %s && exec sleep 600"], timeout: 15m}
agents:
  napper: {description: Naps., prompt: Nap., tools: [nap], max-steps: 3}
`, marker)), 0o644))
	wf := filepath.Join(dir, "nap.workflow.yaml")
	must(t, os.WriteFile(wf, []byte("name: nap\nskills: [./skills]\ninput: nap\ntasks:\n  - {id: nap, assignee: sleeper/napper, goal: nap}\n"), 0o644))
	return wf
}

// remoteSetup connects a coordinator for wf and starts an in-process
// worker named w1 trusting wf's skills, with the model m.
func remoteSetup(t *testing.T, wf string, m model.Model) (*Coordinator, string) {
	t.Helper()
	srv := runServer(t)
	c := coordinator(t, srv.ClientURL(), wf)
	startWorker(t, srv.ClientURL(), wf, m)
	return c, srv.ClientURL()
}

// coordinator connects a coordinator to url and publishes wf's skills.
func coordinator(t *testing.T, url, wf string) *Coordinator {
	t.Helper()
	ctx := context.Background()
	c, err := Connect(ctx, url, Options{CancelGrace: time.Minute})
	must(t, err)
	t.Cleanup(c.Close)
	must(t, c.Publish(ctx, project(t, wf)))
	return c
}

// startWorker runs an in-process worker named w1 trusting wf's skills,
// with the model m, until the test ends.
func startWorker(t *testing.T, url, wf string, m model.Model) {
	t.Helper()
	serve(t, url, WorkerOptions{Work: engine.Work, Name: "w1", Trust: []string{filepath.Join(filepath.Dir(wf), "skills")}, AckWait: 2 * time.Second,
		Model: func(string, string) (model.Model, error) { return m, nil }})
}

func napTask(run, id string) *work.Attempt {
	return &work.Attempt{Run: run, Task: id, Number: 1, Goal: "nap", Skill: "sleeper", Agent: "napper", Assignee: "sleeper/napper",
		Limits: work.Limits{MaxSteps: 3, MaxTranscriptMessages: 100}}
}

// TestCancelTaskStopsAttempt: cancelTask of a task running on a worker
// reaches the worker: its command tool is killed, its model is not asked
// again, the worker commits an outcome saying the task was cancelled, and
// the board reports the task cancelled.
func TestCancelTaskStopsAttempt(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "napping")
	var asked atomic.Int32
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if asked.Add(1) == 1 {
			return &model.Response{Calls: []model.ToolCall{{ID: "c1", Name: "nap", Args: json.RawMessage(`{}`)}}}, nil
		}
		return &model.Response{Text: "woke up"}, nil
	})
	wf := napProject(t, marker)
	c, url := remoteSetup(t, wf, m)

	b := board.New(board.Options{})
	if _, err := b.Add(board.TaskSpec{ID: "nap", Goal: "nap", Assignee: "sleeper/napper"}); err != nil {
		t.Fatal(err)
	}
	runner := func(ctx context.Context, tk *board.Task, _ []board.DepResult) (string, error) {
		at := napTask("r-cancel", tk.ID)
		// The marker's folder is the task's workspace, where its
		// sandboxed command may write.
		at.Workspace = filepath.Dir(marker)
		res, err := c.Dispatch(ctx, at, nil, nil)
		if err != nil {
			return "", err
		}
		if res.Error != "" {
			return "", errors.New(res.Error)
		}
		return res.Result, nil
	}
	done := make(chan board.Report, 1)
	go func() {
		rep, _ := b.Run(context.Background(), runner)
		done <- rep
	}()
	until(t, "the nap command to start on the worker", func() bool { _, err := os.Stat(marker); return err == nil })
	res := b.CallTool(context.Background(), board.ToolCancelTask, json.RawMessage(`{"id":"nap"}`), runner)
	if !strings.Contains(res.Text, "cancelling") {
		t.Fatalf("cancelTask: %s", res.Text)
	}
	var rep board.Report
	select {
	case rep = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the board did not finish after cancelTask")
	}
	if tk := rep.Tasks[0]; tk.Status != board.Cancelled || !strings.Contains(tk.Error, "cancelTask") {
		t.Errorf("task on the board: %s %q; want cancelled by cancelTask", tk.Status, tk.Error)
	}
	out, values := outcome(t, url, "r-cancel", "nap", 1)
	if out.Worker != "w1" || out.Error != errCancelled.Error() || values != 1 {
		t.Errorf("outcome: worker %q error %q, %d values; want w1's, saying it was cancelled", out.Worker, out.Error, values)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the worker's model was asked %d times, want once (the nap call, then cancelled)", n)
	}
}

// TestInterruptedCoordinatorLeavesTaskRunning: a coordinator whose
// dispatch ends for another reason than cancelTask (an interrupt, the
// run's timeout) does not stop the task: the worker finishes it and
// commits its outcome for a resume to pick up.
func TestInterruptedCoordinatorLeavesTaskRunning(t *testing.T) {
	t.Parallel()
	// One task per way a coordinator stops: SIGINT cancels the run's
	// context, --timeout ends it with a deadline.
	causes := map[string]error{"interrupted": context.Canceled, "timed-out": context.DeadlineExceeded}
	started, release := map[string]chan struct{}{}, map[string]chan struct{}{}
	for id := range causes {
		started[id], release[id] = make(chan struct{}, 1), make(chan struct{})
	}
	var asked sync.Map // task id -> *atomic.Int32
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		id := req.Caller.TaskID
		n, _ := asked.LoadOrStore(id, new(atomic.Int32))
		if n.(*atomic.Int32).Add(1) == 1 {
			started[id] <- struct{}{}
		}
		select {
		case <-release[id]:
			return &model.Response{Text: "finished " + id}, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	c, url := remoteSetup(t, napProject(t, filepath.Join(t.TempDir(), "unused")), m)
	for id, cause := range causes {
		ctx, cancel := context.WithCancelCause(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := c.Dispatch(ctx, napTask("r-stop", id), nil, nil)
			errc <- err
		}()
		select {
		case <-started[id]:
		case <-time.After(time.Minute):
			t.Fatalf("%s: the worker did not start the task", id)
		}
		cancel(cause)
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Dispatch = %v, want the context's error", id, err)
		}
		close(release[id])
		var out *Outcome
		until(t, "the worker to commit the outcome", func() bool {
			var err error
			out, err = readOutcome(url, "r-stop", id, 1)
			return err == nil
		})
		if out.Result != "finished "+id || out.Error != "" || out.Worker != "w1" {
			t.Errorf("%s: outcome %+v; want the task finished on w1", id, out.Outcome)
		}
		if n, _ := asked.Load(id); n.(*atomic.Int32).Load() != 1 {
			t.Errorf("%s: the model was asked %d times, want once (the task ran once)", id, n.(*atomic.Int32).Load())
		}
	}
}

// readOutcome reads an attempt's committed outcome, if any.
func readOutcome(url, run, task string, attempt int) (*Outcome, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, ResultsBucket)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, ResultKey(run, task, attempt))
	if err != nil {
		return nil, err
	}
	var out Outcome
	return &out, json.Unmarshal(e.Value(), &out)
}

// TestCancelQueuedAttempt: a task cancelled while its message waits in
// the queue (no worker runs it) gets its cancellation committed by the
// coordinator at once, and the worker that takes the message later drops
// it without running the task.
func TestCancelQueuedAttempt(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	wf := napProject(t, filepath.Join(t.TempDir(), "unused"))
	c := coordinator(t, srv.ClientURL(), wf)
	ctx, cancel := context.WithCancelCause(context.Background())
	type result struct {
		res *work.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := c.Dispatch(ctx, napTask("r-queued", "nap"), nil, nil)
		done <- result{res, err}
	}()
	until(t, "the task message to be queued", func() bool {
		info, err := c.res.tasks.Info(context.Background())
		return err == nil && info.State.Msgs == 1
	})
	cancel(board.ErrTaskCancelled)
	var r result
	select {
	case r = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Dispatch did not return after the cancel")
	}
	if r.err != nil || r.res.Error != cancelledMessage {
		t.Fatalf("Dispatch = %+v, %v; want the cancellation as the outcome", r.res, r.err)
	}
	var asked atomic.Int32
	startWorker(t, srv.ClientURL(), wf, model.Func(func(context.Context, *model.Request) (*model.Response, error) {
		asked.Add(1)
		return &model.Response{Text: "ran"}, nil
	}))
	until(t, "the worker to take the queued message", func() bool {
		info, err := c.res.tasks.Info(context.Background())
		return err == nil && info.State.Msgs == 0
	})
	if n := asked.Load(); n != 0 {
		t.Errorf("a cancelled task ran on the worker (model asked %d times)", n)
	}
	if out, values := outcome(t, srv.ClientURL(), "r-queued", "nap", 1); out.Error != cancelledMessage || values != 1 {
		t.Errorf("outcome %+v (%d values), want the coordinator's cancellation", out.Outcome, values)
	}
}
