package natsboard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/fsdrun/fsd/internal/testlong"
)

// markWorkflow writes a workflow of one task t0 whose agent calls the
// command tool mark (it appends a line to the returned marks file), then
// answers after sleep; a joiner joins it. It returns the workflow's path,
// the skills folder and the marks file.
func markWorkflow(t *testing.T, sleep string) (wf, skills, marks string) {
	t.Helper()
	dir := t.TempDir()
	skills = filepath.Join(dir, "skills")
	marks = filepath.Join(dir, "marks")
	must(t, os.MkdirAll(filepath.Join(skills, "fan"), 0o755))
	must(t, os.WriteFile(filepath.Join(skills, "fan", "fan.skill.yaml"), []byte(`id: fan
name: Fan
description: Marks once, then answers; the joiner joins.
version: 1.0.0
instructions: Mark, then answer.
tools:
  - name: mark
    description: Appends a line to the marks file.
    run: {command: [sh, -c, 'echo ran >> `+marks+`; echo marked']}
agents:
  worker: {description: Marks and answers., prompt: Mark., tools: [mark], max-steps: 3}
  joiner: {description: Joins the results., prompt: Join., max-steps: 2}
`), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "fan.script.yaml"), []byte(`agents:
  worker: [{call: mark}, {sleep: `+sleep+`, say: 'done {{.Task.ID}}'}]
  joiner: [{say: 'joined {{.Task.ID}}'}]
`), 0o644))
	wf = filepath.Join(dir, "fan.workflow.yaml")
	// workspace: . — the marks file's folder — is where the workers'
	// sandboxed command may write.
	must(t, os.WriteFile(wf, []byte(`name: marks
model: scripted
script: fan.script.yaml
skills: [./skills]
workspace: .
input: mark once
tasks:
  - {id: t0, assignee: fan/worker, goal: mark}
  - {id: join, assignee: fan/joiner, goal: join, deps: [t0]}
`), 0o644))
	return wf, skills, marks
}

// TestWorkerKilledResumesFromJournal: the worker running a task is killed
// after the task's command tool ran and its result was journaled; the
// worker that gets the task next resumes the generator from the journal:
// the command ran once, the model was asked once per step (the journaled
// step is not asked again), the events it restates say "replayed", and
// the task completes once with the same answer.
func TestWorkerKilledResumesFromJournal(t *testing.T) {
	testlong.Skip(t)
	k := killMidTask(t)
	srv, run, runs, marks := k.srv, k.run, k.runs, k.marks
	if n := countLines(t, marks); n != 1 {
		t.Fatalf("mark ran %d times before the kill, want 1", n)
	}
	b := worker(t, srv.ClientURL(), "wb", "--concurrency", "1", "--trust", k.skills)
	run.wait(t)
	if got := lastLine(run.output()); got != "joined join" {
		t.Errorf("answer %q", got)
	}
	if n := countLines(t, marks); n != 1 {
		t.Errorf("mark ran %d times, want 1: the resumed worker ran the journaled command again", n)
	}
	if !strings.Contains(b.output(), "resuming the task from its journal") {
		t.Errorf("worker wb did not resume t0 from its journal:\n%s", b.output())
	}
	rec := onlyRun(t, runs)
	out, values := outcome(t, srv.ClientURL(), runID(rec), "t0", 1)
	if out.Worker != "wb" || out.Result != "done t0" || values != 1 {
		t.Errorf("outcome of t0: worker %q result %q, %d values; want wb, done t0, 1", out.Worker, out.Result, values)
	}
	requests, completed := 0, 0
	replayed := map[string]int{}
	for _, e := range events(t, rec) {
		if e["task"] != "t0" {
			continue
		}
		switch {
		case e["type"] == "request":
			requests++
		case e["type"] == "task.completed":
			completed++
		}
		if e["replayed"] == true {
			replayed[fmt.Sprint(e["type"], " ", e["tool"])]++
			if e["type"] == "text" || e["type"] == "request" {
				t.Errorf("a live event of the resumed task says replayed: %v", e)
			}
		}
	}
	// Step 1 asked by wa, step 2 by wb: never step 1 again.
	if requests != 2 {
		t.Errorf("the model was asked %d times for t0, want 2 (one per step)", requests)
	}
	if completed != 1 {
		t.Errorf("%d task.completed events for t0, want 1", completed)
	}
	if replayed["tool.result mark"] != 1 {
		t.Errorf("replayed events of t0: %v; want the journaled mark result restated once, marked replayed", replayed)
	}
}

// killedTask is a --nats run whose only worker (wa) was killed once its
// task t0 had journaled its command's result (markWorkflow).
type killedTask struct {
	srv                 *server.Server
	r                   *resources
	run                 *proc
	skills, marks, runs string
}

// killMidTask starts a run of markWorkflow on one worker and kills the
// worker once t0's journal holds the task message, the call and its
// result.
func killMidTask(t *testing.T) *killedTask {
	t.Helper()
	k := &killedTask{srv: runServer(t)}
	var wf string
	wf, k.skills, k.marks = markWorkflow(t, "6s")
	dir := filepath.Dir(wf)
	a := worker(t, k.srv.ClientURL(), "wa", "--concurrency", "1", "--trust", k.skills)
	k.runs = filepath.Join(dir, "runs")
	k.run = start(t, dir, nil, "run", wf, "--nats", k.srv.ClientURL(), "--runs-dir", k.runs)
	k.r = testJS(t, k.srv.ClientURL())
	until(t, "t0's command result to be journaled", func() bool {
		ents, _ := os.ReadDir(k.runs)
		if len(ents) != 1 {
			return false
		}
		got, err := journalOf(context.Background(), k.r, ents[0].Name(), "t0", 1)
		return err == nil && len(got) >= 3
	})
	a.kill()
	return k
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	must(t, err)
	return strings.Count(string(b), "\n")
}
