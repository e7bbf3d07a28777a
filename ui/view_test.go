package ui

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
)

// A live run's task shows its call's last progress report until the
// call's result.
func TestViewShowsCallProgress(t *testing.T) {
	rec := &runrecord.Record{Summary: runrecord.Summary{Status: runrecord.Running}, Events: []event.Event{
		{Type: event.TaskAdded, Task: "crawl", Agent: "k/crawler"},
		{Type: event.TaskStarted, Task: "crawl"},
		{Type: event.ToolProgress, Task: "crawl", Tool: "mcp__k__s__fetch", Progress: &event.Progress{Done: 1, Total: 4}, Text: "page 1"},
	}}
	if v := View(rec, time.Now()); len(v.Tasks) != 1 || v.Tasks[0].Progress != "mcp__k__s__fetch 1/4 (25%): page 1" {
		t.Fatalf("tasks: %+v", v.Tasks)
	}
	rec.Events = append(rec.Events, event.Event{Type: event.ToolResult, Task: "crawl", Tool: "mcp__k__s__fetch"})
	if v := View(rec, time.Now()); v.Tasks[0].Progress != "" {
		t.Fatalf("progress after the result: %q", v.Tasks[0].Progress)
	}
}

// The run page names the worker process that ran a task (its end event
// says), and none for a task the run's own process ran.
func TestViewNamesTheWorker(t *testing.T) {
	rec := &runrecord.Record{Events: []event.Event{
		{Type: event.TaskAdded, Task: "a", Agent: "s/x"}, {Type: event.TaskAdded, Task: "b", Agent: "s/y"},
		{Type: event.TaskCompleted, Task: "a", Worker: &event.Worker{Name: "w1", Host: "box", PID: 42}},
		{Type: event.TaskFailed, Task: "b", Err: "boom"},
	}}
	got := map[string]string{}
	for _, tv := range View(rec, time.Now()).Tasks {
		got[tv.ID] = tv.Worker
	}
	if got["a"] != "w1 (box, pid 42)" || got["b"] != "" {
		t.Errorf("workers %v, want a on w1 (box, pid 42) and b on none", got)
	}
}

// A task retried on workers shows each attempt's transcript with the
// worker that ran it; a task tried once, its worker.
//
// O10: each attempt names its worker.
func TestViewNamesTheWorkerOfEachAttempt(t *testing.T) {
	w1, w2 := &event.Worker{Name: "w1", Host: "box", PID: 1}, &event.Worker{Name: "w2", Host: "box", PID: 2}
	rec := &runrecord.Record{Events: []event.Event{
		{Type: event.TaskAdded, Task: "a", Agent: "s/x"}, {Type: event.TaskAdded, Task: "b", Agent: "s/y"},
		{Type: event.TaskCompleted, Task: "a", Worker: w2, Attempts: []event.Attempt{{N: 1, Worker: w1, Err: "lost"}, {N: 2, Worker: w2}}},
		{Type: event.TaskCompleted, Task: "b", Worker: w1},
	}, Gens: []*runrecord.Gen{{Name: "task:a", Task: "a", Attempt: 1}, {Name: "task:a#2", Task: "a", Attempt: 2}, {Name: "task:b", Task: "b", Attempt: 1}}}
	var got []string
	for _, g := range View(rec, time.Now()).Gens {
		got = append(got, fmt.Sprintf("%s %d %s", g.Name, g.Attempt, g.Worker))
	}
	want := []string{"task:a 0 w1 (box, pid 1)", "task:a#2 2 w2 (box, pid 2)", "task:b 0 w1 (box, pid 1)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("generators %q, want %q", got, want)
	}
}
