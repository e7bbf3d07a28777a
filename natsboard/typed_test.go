package natsboard

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsdrun/fsd/engine"
)

// typedWorkflow writes a pipeline whose first agent answers typed JSON
// (and needs one repair turn to get it right) and whose second task's
// goal is a template over that JSON.
func typedWorkflow(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "skills", "stats"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "skills", "stats", "stats.skill.yaml"), []byte(`id: stats
name: Stats
description: Counts open items and reports on them.
version: 1.0.0
instructions: Count, then report.
agents:
  collector:
    prompt: Count the open items.
    output:
      type: object
      required: [total, items]
      properties:
        total: {type: integer, minimum: 0}
        items: {type: array, items: {type: string}}
  reporter:
    prompt: Write the note.
`), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "typed.script.yaml"), []byte(`agents:
  collector:
    - say: 'about three'
    - say: '{"total": 3, "items": ["a", "b", "c"]}'
  reporter:
    - say: 'note: {{.Task.Goal}}'
`), 0o644))
	wf := filepath.Join(dir, "typed.workflow.yaml")
	must(t, os.WriteFile(wf, []byte(`name: typed
model: scripted
script: typed.script.yaml
skills: [./skills]
input: the tracker
tasks:
  - {id: collect, goal: "Count the open items of {{.Input}}", assignee: stats/collector}
  - id: report
    assignee: stats/reporter
    deps: [collect]
    goal: "Write a note on the {{.Deps.collect.total}} open items, starting with {{index .Deps.collect.items 0}}"
`), 0o644))
	return wf
}

// TestTypedResultsThroughNATS: a typed answer (with its repair turn) and
// a goal template over it give the same board through NATS as in
// process.
func TestTypedResultsThroughNATS(t *testing.T) {
	t.Parallel()
	wf := typedWorkflow(t)
	local := runLocal(t, wf, nil, t.TempDir())

	srv := runServer(t)
	ctx := context.Background()
	c, err := Connect(ctx, srv.ClientURL(), Options{})
	must(t, err)
	defer c.Close()
	must(t, c.Publish(ctx, project(t, wf)))
	serve(t, srv.ClientURL(), WorkerOptions{Work: engine.Work, Name: "w", AckWait: 2 * time.Second})

	remote := runLocal(t, wf, c, t.TempDir())
	want, got := boardResults(t, local.Dir), boardResults(t, remote.Dir)
	if want["report"] != "completed: note: Write a note on the 3 open items, starting with a" {
		t.Fatalf("in-process board: %v", want)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("task %s through NATS: %q; in process: %q", id, got[id], w)
		}
	}
	if remote.Answer != local.Answer {
		t.Errorf("answer through NATS %q, in process %q", remote.Answer, local.Answer)
	}
}
