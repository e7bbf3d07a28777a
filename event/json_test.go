package event

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/jsonw"
	"github.com/fsdrun/fsd/model"
)

// TestAppendJSON: the hand-written appender writes what json.Marshal
// writes, for every field (a field added to Event, Tokens, Usage,
// Progress or Worker and not to the appender fails here) and for the
// events a run writes most.
func TestAppendJSON(t *testing.T) {
	if !eventAppenderMatches() {
		t.Error("appendEvent does not write what json.Marshal writes for an Event with every field set: add the new field to it")
	}
	if !usageAppenderMatches() {
		t.Error("appendUsage does not write what json.Marshal writes for a model.Usage with every field set: add the new field to it")
	}
	now := time.Date(2026, 12, 2, 2, 17, 52, 349685420, time.UTC)
	for _, e := range []Event{
		{Type: TaskAdded, Time: now, Run: "r1", Task: "join", Agent: "fan/joiner", Goal: "join", Deps: []string{"t0", "t1"}},
		{Type: "request", Time: now, Run: "r1", Task: "t2", Tokens: &Tokens{Context: 2, Window: 8, Total: 10}, Messages: 1,
			Usage: &model.Usage{InputTokens: 10, OutputTokens: 3, Estimated: true}},
		{Type: TaskCompleted, Time: now, Run: "r1", Task: "t2", Result: "done <t2>", Elapsed: 15.444, Cost: 1e-7},
		{Type: ToolProgress, Time: now, Run: "r1", Tool: "fetch", Progress: &Progress{Done: 3}, Worker: &Worker{Name: "w"}},
		{Type: ToolCall, Time: now, Run: "r1", Args: json.RawMessage(`{"path": "a<b"}`)},
	} {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.AppendJSON(nil); err != nil || string(got) != string(want) {
			t.Errorf("AppendJSON\n got %s\nwant %s", got, want)
		}
	}
	bad := Event{Type: ToolCall, Args: json.RawMessage(`{"cut`)}
	if _, err := bad.AppendJSON(nil); err == nil {
		t.Error("AppendJSON of arguments that are not JSON: no error")
	}
	var full Event
	jsonw.Fill(&full)
	want, _ := json.Marshal(full)
	if got := appendEvent(nil, &full); string(got) != string(want) {
		t.Errorf("appendEvent of every field\n got %s\nwant %s", got, want)
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	e := Event{Type: TaskCompleted, Time: time.Now(), Run: "20261202-021752-50650c13", Task: "t2", Agent: "fan/worker",
		Result: "done t2", Usage: &model.Usage{InputTokens: 10, OutputTokens: 3, Estimated: true}, Elapsed: 15.444}
	b.Run("append", func(b *testing.B) {
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = e.AppendJSON(buf[:0])
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(e)
		}
	})
}
