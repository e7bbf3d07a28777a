package visibility

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// One clipping rule for every generator: a worker's router clips what the
// host's events clip, on a character boundary, and says how long it was.
func TestEventsClip(t *testing.T) {
	long := strings.Repeat("é", MaxEventResult) // 2 bytes each: the cut falls inside one
	huge := json.RawMessage(`{"x":"` + strings.Repeat("a", MaxEventResult) + `"}`)
	msgs := []model.Message{
		{Role: model.Assistant, Text: strings.Repeat("t", MaxEventText+1), Calls: []model.ToolCall{{ID: "c", Name: "f", Args: huge}}},
		{Role: model.Tool, CallID: "c", Name: "f", Text: long},
	}
	rec := &event.Recorder{}
	r := New(spec.VisibilitySub, rec, Tags{Run: "r", Task: "t", Agent: "a"}, nil)
	for _, m := range msgs {
		r.Item(m)
	}
	var direct []event.Event
	for _, m := range msgs {
		direct = append(direct, Events(m, event.Event{})...)
	}
	routed := rec.Events()
	if len(routed) != 3 || len(direct) != 3 {
		t.Fatalf("routed %d events, direct %d, want 3 each", len(routed), len(direct))
	}
	for i, e := range routed {
		d := direct[i]
		if e.Text != d.Text || e.Result != d.Result || string(e.Args) != string(d.Args) {
			t.Errorf("event %d: the router and Events clip differently", i)
		}
	}
	text, args, result := routed[0].Text, routed[1].Args, routed[2].Result
	if len(text) > MaxEventText+100 || !strings.Contains(text, "bytes in all") {
		t.Errorf("text not clipped: %d bytes", len(text))
	}
	if !json.Valid(args) || !strings.Contains(string(args), "bytes of arguments") {
		t.Errorf("args = %s, want a note of their size", args)
	}
	if len(result) > MaxEventResult+100 || !utf8.ValidString(result) || !strings.Contains(result, "bytes in all") {
		t.Errorf("result not clipped on a character boundary: %d bytes, valid %v", len(result), utf8.ValidString(result))
	}
}
