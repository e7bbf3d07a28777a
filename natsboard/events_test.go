package natsboard

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/nats-io/nats-server/v2/server"
)

// TestOutcomesDoNotNeedEvents: worker events are best effort, and nothing
// a run decides or keeps depends on them. The worker here may not publish
// on the events subjects (the server drops every event it sends; the
// coordinator drops those its outcomes carry), yet the
// run gives the in-process answer, every task's result, and each task's
// transcript in the record; only the workers' events are missing.
func TestOutcomesDoNotNeedEvents(t *testing.T) {
	t.Parallel()
	wf := filepath.Join("..", "examples", "pipeline.workflow.yaml")
	local := runLocal(t, wf, nil, t.TempDir())
	if workerToolCalls(t, local.Dir) == 0 {
		t.Fatal("the in-process run has no worker tool.call events: the check below could not fail")
	}

	all := &server.SubjectPermission{Allow: []string{">"}}
	noEvents := &server.SubjectPermission{Allow: []string{">"}, Deny: []string{eventSubject + ".>"}}
	srv := runServerWith(t, server.Options{Users: []*server.User{
		{Username: "coord", Password: "c", Permissions: &server.Permissions{Publish: all, Subscribe: all}},
		{Username: "worker", Password: "w", Permissions: &server.Permissions{Publish: noEvents, Subscribe: all}},
	}})
	url := func(user string) string {
		return strings.Replace(srv.ClientURL(), "nats://", "nats://"+user+"@", 1)
	}
	c := coordinator(t, url("coord:c"), wf)
	// The events a worker has not sent when it commits ride in the
	// outcome: dropped too, so that no worker event reaches the run.
	c.dropOutcomeEvents = true
	serve(t, url("worker:w"), WorkerOptions{Work: engine.Work, Name: "w1", Trust: []string{filepath.Join("..", "examples", "skills")}, AckWait: 2 * time.Second})

	remote := runLocal(t, wf, c, t.TempDir())
	if remote.Answer != local.Answer {
		t.Errorf("answer without worker events:\n%s\nin process:\n%s", remote.Answer, local.Answer)
	}
	want, got := boardResults(t, local.Dir), boardResults(t, remote.Dir)
	for id, w := range want {
		if got[id] != w {
			t.Errorf("task %s without worker events: %q; in process: %q", id, got[id], w)
		}
	}
	if n := workerToolCalls(t, remote.Dir); n != 0 {
		t.Errorf("%d worker tool.call events reached the record: the worker's events were not dropped, so this test proves nothing", n)
	}
	gens, err := runrecord.ReadJournal(filepath.Join(remote.Dir, runrecord.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	tasks := map[string]bool{}
	for _, g := range gens {
		if g.Gen.Task != "" && len(g.Entries) > 0 {
			tasks[g.Gen.Task] = true
		}
	}
	for id := range want {
		if !tasks[id] {
			t.Errorf("task %s's transcript is not in the record", id)
		}
	}
}

// workerToolCalls counts the tool.call events of board tasks in a run
// record's events.jsonl.
func workerToolCalls(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		var e event.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("events.jsonl: %v", err)
		}
		if e.Type == event.ToolCall && e.Task != "" {
			n++
		}
	}
	return n
}
