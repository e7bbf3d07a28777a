package transcript_test

import (
	"fmt"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/transcript"
)

func ExampleTranscript_Window() {
	tr := transcript.New(nil) // memory only; pass a file to keep a record
	tr.AppendMessage(model.Message{Role: model.User, Text: "Hi"})
	tr.AppendMessage(model.Message{Role: model.Assistant, Text: "Hello."})
	tr.AppendMessage(model.Message{Role: model.User, Text: "Weekly figures?"})
	tr.AppendMessage(model.Message{Role: model.Assistant, Calls: []model.ToolCall{{ID: "c1", Name: "fetch_sales"}}})
	tr.AppendMessage(model.Message{Role: model.Tool, CallID: "c1", Text: "42 rows"})
	tr.AppendMessage(model.Message{Role: model.Assistant, Text: "42 rows this week."})

	// A cap of 4 drops the first turn whole; the call and its result stay
	// together.
	for _, m := range tr.Window(4) {
		switch {
		case len(m.Calls) > 0:
			fmt.Printf("%s calls %s\n", m.Role, m.Calls[0].Name)
		case m.Role == model.Tool:
			fmt.Printf("%s answers %s: %s\n", m.Role, m.CallID, m.Text)
		default:
			fmt.Printf("%s: %s\n", m.Role, m.Text)
		}
	}
	// Output:
	// user: Weekly figures?
	// assistant calls fetch_sales
	// tool answers c1: 42 rows
	// assistant: 42 rows this week.
}
