package transcript

import (
	"strconv"
	"testing"

	"github.com/fsdrun/fsd/model"
)

// FuzzWindow drives a transcript with arbitrary operations, malformed ones
// included: appends the transcript refuses must leave it unchanged, and
// every window must satisfy W1/W2 over what was accepted.
func FuzzWindow(f *testing.F) {
	f.Add([]byte{0, 1, 2, 2, 3, 0, 4}, uint8(3))
	f.Add([]byte{1, 0, 2, 5, 0, 1, 2, 2, 2, 2}, uint8(1))
	f.Add([]byte{0, 3, 3, 3, 3, 3, 3, 3, 1, 2, 2}, uint8(4))
	f.Add([]byte{0, 9, 7, 9, 2, 9, 2, 15, 9, 0, 9}, uint8(3))
	f.Fuzz(func(t *testing.T, ops []byte, capb uint8) {
		var x Index
		var msgs []model.Message
		id := 0
		for _, op := range ops {
			var m model.Message
			switch op % 6 {
			case 0:
				m = model.Message{Role: model.User, Text: "u"}
			case 1, 4: // an assistant message with 0-4 calls
				m = model.Message{Role: model.Assistant, Text: "a"}
				for range int(op/6) % 5 {
					id++
					m.Calls = append(m.Calls, model.ToolCall{ID: strconv.Itoa(id)})
				}
			case 2: // the next expected result, if any
				m = model.Message{Role: model.Tool}
				if calls := x.InFlight(); len(calls) > 0 {
					m.CallID = calls[0].ID
				}
			case 3: // a text-only assistant message or a context line
				m = model.Message{Role: model.Assistant, Text: "t"}
				if op/6%2 == 1 {
					m = model.Message{Role: model.Context, Text: "[fsd context] line"}
				}
			case 5: // a result with an arbitrary id
				m = model.Message{Role: model.Tool, CallID: strconv.Itoa(int(op / 6))}
			}
			before := x.Len()
			if err := x.Add(m); err != nil {
				if x.Len() != before {
					t.Fatalf("refused message changed the index")
				}
				continue
			}
			msgs = append(msgs, m)
		}
		max := int(capb % 101)
		if err := checkWindow(msgs, max, x.Window(msgs, max)); err != nil {
			t.Fatalf("%d messages, max %d: %v", len(msgs), max, err)
		}
		if err := checkOldest(msgs, max, x.WindowOldest(msgs, max)); err != nil {
			t.Fatalf("oldest: %d messages, max %d: %v", len(msgs), max, err)
		}
	})
}
