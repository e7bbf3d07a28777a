package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/event"
)

// The screen shows the host's text once however it came — streamed, then
// restated whole; whole; or streamed, voided by a retry and streamed
// again — with a line per tool call, and leaves out workers' text and the
// events a session's turn restates from earlier turns.
func TestChatScreenText(t *testing.T) {
	var out bytes.Buffer
	s := newChatScreen(&out)
	for _, e := range []event.Event{
		{Type: event.Text, Text: "an earlier turn", Replayed: true},
		{Type: event.Text, Text: "Look", Delta: true},
		{Type: event.Text, Text: "ing it up.", Delta: true},
		{Type: event.Text, Text: "Looking it up."},
		{Type: event.ToolCall, Tool: "read_skill", Args: json.RawMessage(`{ "id": "notes" }`)},
		{Type: event.Text, Text: "a worker's text", Task: "t1", Agent: "notes/writer"},
		{Type: event.Text, Text: "Half an ans", Delta: true},
		{Type: event.TextReset},
		{Type: event.Text, Text: "The answer", Delta: true},
		{Type: event.Text, Text: " is 42.", Delta: true},
		{Type: event.Text, Text: "The answer is 42."},
	} {
		s.Emit(e)
		s.mu.Lock()
		s.draw() // as a tick would, between any two events
		s.mu.Unlock()
	}
	s.finish()
	want := "Looking it up.\n" +
		"· read_skill {\"id\":\"notes\"}\n" +
		"Half an ans\n" +
		"(the model call was retried; its answer follows)\n" +
		"The answer is 42.\n"
	if got := finalScreen(out.String()); got != want {
		t.Errorf("screen (-got +want):\n%s", cmp.Diff(got, want))
	}
	if s.said != "The answer is 42." {
		t.Errorf("said %q", s.said)
	}
}

// finalScreen plays the cursor-up and erase-below codes the screen writes
// on a grid of lines and returns what is left on it.
func finalScreen(out string) string {
	lines := []string{""}
	row := 0
	for i := 0; i < len(out); i++ {
		switch {
		case out[i] == '\x1b':
			j := i + 2
			n := 0
			for ; out[j] >= '0' && out[j] <= '9'; j++ {
				n = n*10 + int(out[j]-'0')
			}
			switch out[j] {
			case 'A':
				row -= n
			case 'J':
				lines = lines[:row+1]
				lines[row] = ""
			}
			i = j
		case out[i] == '\r':
		case out[i] == '\n':
			row++
			if row == len(lines) {
				lines = append(lines, "")
			}
		default:
			lines[row] += out[i : i+1]
		}
	}
	s := ""
	for _, l := range lines[:row] {
		s += l + "\n"
	}
	return s
}
