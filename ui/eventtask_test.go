package ui

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
)

// TestEventTaskAgreesWithDecoding pins the writer's field order that
// eventTask's fast path reads: for every type a page applies, an event
// line as the record's writer encodes it — with or without a task, and
// with "task" keys inside the values that may come before or after the
// task's own — yields the type and task that decoding the line gives.
func TestEventTaskAgreesWithDecoding(t *testing.T) {
	nested := json.RawMessage(`{"task":"decoy","deps":["x"]}`)
	for _, typ := range pageTypes {
		for _, task := range []string{"", "t1", `t"2`} {
			e := event.Event{
				Type: typ, Time: time.Unix(1, 0).UTC(), Run: "r", Task: task, Agent: "s/a",
				Text: `"task":"text"`, Tool: "board_add", CallID: "c1", Args: nested,
				Result: `{"task":"result"}`, Output: nested, Reason: "r", Goal: "g",
				Usage: &model.Usage{InputTokens: 1}, Tokens: &event.Tokens{},
				Progress: &event.Progress{Done: 1}, Worker: &event.Worker{Name: "w"},
				Attempts: []event.Attempt{{Worker: &event.Worker{Name: "w"}, Err: "e"}},
			}
			line, err := e.AppendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			gotType, gotTask, err := eventTask(line)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			var want struct{ Type, Task string }
			if err := json.Unmarshal(line, &want); err != nil {
				t.Fatal(err)
			}
			if gotType != want.Type || string(gotTask) != want.Task {
				t.Errorf("%s\neventTask: type %q task %q; decoding: type %q task %q", line, gotType, gotTask, want.Type, want.Task)
			}
		}
	}
}
