package runrecord

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/transcript"
)

// TestAppendLine: requests.jsonl's lines are what json.Marshal writes,
// for every field of Line (a field added to it and not to the appender
// fails here) and for the lines a run writes most.
func TestAppendLine(t *testing.T) {
	if !lineAppenderMatches() {
		t.Error("appendLineJSON does not write what json.Marshal writes for a Line with every field set: add the new field to it")
	}
	now := time.Date(2026, 12, 2, 2, 17, 52, 354780852, time.UTC)
	ctx := "Answer."
	for _, l := range []Line{
		{Kind: KindBlob, Hash: "t6afada2c7cf0c995a7d41aa7", Text: &ctx},
		{Kind: KindBlob, Hash: "f1", Tool: &ToolText{Name: "grep", Description: "Finds <text>.", Parameters: `{"type":"object"}`}},
		{Kind: KindRequest, Gen: "tasks/t2.jsonl", Task: "t2", Agent: "fan/worker", Time: now, Context: "t6a",
			Tools: []string{"f1", "f2"}, Window: []transcript.Span{{From: 0, To: 1}, {From: 3, To: 9}}, Stubs: map[int]string{10: "a", 3: "b"}, At: 1},
		{Kind: KindResponse, Gen: "tasks/t2.jsonl", Task: "t2", Step: 2, Time: now, Tokens: &event.Tokens{Context: 2, Window: 8, Total: 10},
			Usage: &model.Usage{InputTokens: 10, OutputTokens: 3, Estimated: true}, Cost: 0.0000125, Error: "rate limited"},
	} {
		want, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendLine(nil, &l); string(got) != string(want)+"\n" {
			t.Errorf("appendLine\n got %s\nwant %s", got, want)
		}
	}
}

// TestAppendBoard: board.json holds each task as json.Marshal encodes it
// (a typed result once, as output), one a line, and reads back.
func TestAppendBoard(t *testing.T) {
	if !taskAppenderMatches() {
		t.Error("appendTask does not write what json.Marshal writes for a board.Task with every field set: add the new field to it")
	}
	now := time.Date(2026, 12, 2, 2, 17, 52, 368153554, time.UTC)
	tasks := []board.Task{
		{ID: "t0", Goal: "task 0", Assignee: "fan/worker", Status: board.Completed, Result: "done t0", Attempts: 1, Started: now, Finished: now},
		{ID: "join", Goal: "join", Deps: []string{"t0"}, Status: board.Completed, Result: `{"n": 1}`, Output: json.RawMessage(`{"n": 1}`), Attempts: 1},
		{ID: "x", Goal: "<x> & y", Input: "in", Status: board.Failed, Error: "boom"},
	}
	got, err := appendBoard(nil, tasks)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if len(lines) != len(tasks)+2 || lines[0] != `{"tasks":[` || lines[len(lines)-1] != "]}" {
		t.Fatalf("board.json is not one task a line:\n%s", got)
	}
	for i := range tasks {
		want, _ := json.Marshal(tasks[i])
		if line := strings.TrimSuffix(lines[i+1], ","); line != string(want) {
			t.Errorf("task %d\n got %s\nwant %s", i, line, want)
		}
	}
	var back struct{ Tasks []board.Task }
	if err := json.Unmarshal(got, &back); err != nil || len(back.Tasks) != 3 || back.Tasks[1].Result != `{"n":1}` {
		t.Errorf("board.json does not read back: %v %+v", err, back.Tasks)
	}
	if empty, _ := appendBoard(nil, nil); !json.Valid(empty) {
		t.Errorf("an empty board is not JSON: %s", empty)
	}
}
