package visibility

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
)

// Bounds on what a message copies into events; the transcript keeps the
// whole text.
const (
	// MaxEventText bounds an assistant message's text in a text event.
	MaxEventText = 64 << 10
	// MaxEventResult bounds a tool result, and a call's arguments, in an
	// event.
	MaxEventResult = 4 << 10
)

// Events turns one generator message into client events, each a copy of
// base (its time, run, task and agent) with the message's part filled in:
// an assistant message a text event (when it has text) and a tool.call
// event per call, a tool message a tool.result event (error set when it
// failed). Other roles make no event. It is the one conversion from
// messages to events, for the host and for workers, with one clipping
// rule: text over MaxEventText, results over MaxEventResult and arguments
// over MaxEventResult (or not JSON) are cut and say how long they were.
func Events(m model.Message, base event.Event) []event.Event {
	var out []event.Event
	each(m, &base, func(e event.Event) { out = append(out, e) })
	return out
}

// each calls f with each of Events(m, base) in order, without the slice.
// It holds one event on its stack: a task's items pass here on its
// deepest calls.
func each(m model.Message, base *event.Event, f func(event.Event)) {
	var e event.Event
	switch m.Role {
	case model.Assistant:
		if m.Text != "" {
			e = *base
			e.Type, e.Text = event.Text, clip(m.Text, MaxEventText, "text")
			f(e)
		}
		for _, c := range m.Calls {
			e = *base
			e.Type, e.Tool, e.CallID, e.Args = event.ToolCall, c.Name, c.ID, clipArgs(c.Args)
			f(e)
		}
	case model.Tool:
		e = *base
		e.Type, e.Tool, e.CallID, e.Result, e.Error = event.ToolResult, m.Name, m.CallID, clip(m.Text, MaxEventResult, "result"), m.IsError
		f(e)
	}
}

// clip cuts s after max bytes, on a character boundary.
func clip(s string, max int, what string) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… [%d bytes in all; the transcript has the whole %s]", len(s), what)
}

// clipArgs keeps huge or malformed arguments out of the event stream.
func clipArgs(a json.RawMessage) json.RawMessage {
	if len(a) > MaxEventResult || (len(a) > 0 && !json.Valid(a)) {
		b, _ := json.Marshal(fmt.Sprintf("[%d bytes of arguments]", len(a)))
		return b
	}
	return a
}
