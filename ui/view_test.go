package ui

import (
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
