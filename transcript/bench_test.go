package transcript

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/fsdrun/fsd/model"
)

// benchTranscript builds n messages of turns shaped like real ones: a user
// message, a group of three calls with results, a read, an answer.
func benchTranscript(b *testing.B, n int) *Transcript {
	b.Helper()
	tr := New(nil)
	id := 0
	call := func(k int) {
		a := model.Message{Role: model.Assistant}
		for range k {
			id++
			a.Calls = append(a.Calls, model.ToolCall{ID: strconv.Itoa(id), Name: "fetch"})
		}
		tr.AppendMessage(a)
		for _, c := range a.Calls {
			tr.AppendMessage(model.Message{Role: model.Tool, CallID: c.ID, Text: "rows"})
		}
	}
	for tr.Len() < n {
		tr.AppendMessage(model.Message{Role: model.User, Text: "question"})
		call(3)
		call(1)
		tr.AppendMessage(model.Message{Role: model.Assistant, Text: "answer"})
	}
	return tr
}

// BenchmarkWindow is W4: a window of 60 must cost the same from a
// transcript of 1,000, 10,000 or 1,000,000 messages.
func BenchmarkWindow(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 1_000_000} {
		tr := benchTranscript(b, n)
		b.Run(fmt.Sprintf("msgs=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if w := tr.Window(60); len(w) == 0 {
					b.Fatal("empty window")
				}
			}
		})
	}
}

// BenchmarkWindowTrimmed windows a current turn longer than the cap: the
// path that copies the user message and the newest groups.
func BenchmarkWindowTrimmed(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		tr := benchTranscript(b, n)
		tr.AppendMessage(model.Message{Role: model.User, Text: "long turn"})
		for i := range 500 {
			id := "long" + strconv.Itoa(i)
			tr.AppendMessage(model.Message{Role: model.Assistant, Calls: []model.ToolCall{{ID: id}}})
			tr.AppendMessage(model.Message{Role: model.Tool, CallID: id})
		}
		b.Run(fmt.Sprintf("msgs=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if w := tr.Window(60); len(w) != 59 {
					b.Fatalf("window of %d, want 59", len(w))
				}
			}
		})
	}
}
