package transcript

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fsdrun/fsd/model"
)

// TestAppendEntry: journal lines are what json.Marshal writes, for every
// field of Entry and model.Message (a field added to either and not to
// the appender fails here) and for the entries a run writes most.
func TestAppendEntry(t *testing.T) {
	if !entryAppenderMatches() {
		t.Error("appendEntry does not write what json.Marshal writes for an Entry with every field set: add the new field to it")
	}
	now := time.Date(2026, 12, 2, 2, 17, 52, 350313121, time.UTC)
	for _, e := range []Entry{
		{Seq: 0, Time: now, Kind: KindMessage, Message: &model.Message{Role: model.User, Text: "Task t2: task 2\n"}},
		{Seq: 3, Time: now, Kind: KindMessage, Message: &model.Message{Role: model.Tool, CallID: "c1", Name: "grep", Text: "<no match>", IsError: true, Spool: "h1"}},
		{Seq: 4, Time: now, Kind: KindMessage, Message: &model.Message{Role: model.Assistant, Calls: []model.ToolCall{{ID: "c2", Name: "grep", Args: json.RawMessage(`{"q": "x"}`)}}}},
		{Seq: 5, Time: now, Kind: KindContext, Context: &ContextChange{Loaded: []string{"a"}, Reason: "load", Line: "loaded a"}},
	} {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := appendEntryLine(nil, &e); err != nil || string(got) != string(want)+"\n" {
			t.Errorf("appendEntryLine\n got %s (%v)\nwant %s", got, err, want)
		}
	}
	bad := Entry{Kind: KindMessage, Message: &model.Message{Role: model.Assistant, Calls: []model.ToolCall{{ID: "c", Name: "x", Args: json.RawMessage(`{"cut`)}}}}
	if _, err := appendEntryLine(nil, &bad); err == nil {
		t.Error("arguments that are not JSON were journaled")
	}
}
