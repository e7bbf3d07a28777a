package visibility

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

var items = []model.Message{
	{Role: model.User, Text: "Task: write the brief"},
	{Role: model.Assistant, Text: "Fetching.", Calls: []model.ToolCall{{ID: "c1", Name: "fetch", Args: json.RawMessage(`{"week":"W1"}`)}}},
	{Role: model.Tool, CallID: "c1", Name: "fetch", Text: "offline", IsError: true},
	{Role: model.Assistant, Text: "The brief."},
}

func TestRouter(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := func(typ string, f func(*event.Event)) event.Event {
		e := event.Event{Type: typ, Time: clock, Run: "r1", Task: "brief", Agent: "summarizer"}
		f(&e)
		return e
	}
	clientEvents := []event.Event{
		ev(event.Text, func(e *event.Event) { e.Text = "Fetching." }),
		ev(event.ToolCall, func(e *event.Event) { e.Tool, e.CallID, e.Args = "fetch", "c1", json.RawMessage(`{"week":"W1"}`) }),
		ev(event.ToolResult, func(e *event.Event) { e.Tool, e.CallID, e.Result, e.Error = "fetch", "c1", "offline", true }),
		ev(event.Text, func(e *event.Event) { e.Text = "The brief." }),
	}
	tests := []struct {
		name        string
		v           spec.Visibility
		wantEvents  []event.Event
		wantHistory []model.Message
	}{
		{name: "sub", v: spec.VisibilitySub, wantEvents: clientEvents},
		{name: "primary", v: spec.VisibilityPrimary, wantEvents: clientEvents, wantHistory: items[1:]},
		{name: "history only", v: spec.Visibility{History: true}, wantHistory: items[1:]},
		{name: "neither", v: spec.Visibility{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &event.Recorder{}
			var history []model.Message
			r := New(tt.v, rec, Tags{Run: "r1", Task: "brief", Agent: "summarizer"}, func(m model.Message) { history = append(history, m) })
			r.Now = func() time.Time { return clock }
			for _, m := range items {
				r.Item(m)
			}
			if diff := cmp.Diff(tt.wantEvents, rec.Events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantHistory, history); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRouterNilTargets(t *testing.T) {
	r := New(spec.VisibilityPrimary, nil, Tags{}, nil)
	for _, m := range items {
		r.Item(m) // must not panic
	}
}
