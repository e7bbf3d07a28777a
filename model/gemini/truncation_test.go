package gemini

import (
	"strings"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/internal/providertest"
	"github.com/fsdrun/fsd/model/internal/wire"
	"github.com/fsdrun/fsd/model/retry"
)

// TestTruncatedStream: a stream that stops before a candidate carries a
// finish reason is not an answer, however much text it sent. It is
// retried, and the consumer hears a reset before the retry's text so it
// never shows "Two Two calls.".
func TestTruncatedStream(t *testing.T) {
	last := strings.Index(okStream, `data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall"`)
	second := strings.Index(okStream, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"calls."}`)
	both := []string{"Two ", "calls.", "<reset>", "Two ", "calls."}
	prov.TruncatedStream(t, []providertest.Cut{
		{Name: "chunked body that ends cleanly", First: fakeserver.Reply{Body: okStream[:last], Chunked: true, Header: sse}, Deltas: both},
		{Name: "connection closed mid-event", First: fakeserver.Reply{Body: okStream[:last+60], Abort: true, Header: sse}, Deltas: both},
		{Name: "one event, then a clean end", First: fakeserver.Reply{Body: okStream[:second], Header: sse},
			Deltas: []string{"Two ", "<reset>", "Two ", "calls."}},
		{Name: "no event at all", First: fakeserver.Reply{Body: "", Header: sse}, Deltas: []string{"Two ", "calls."}},
	}, "gemini: the answer stream ended early, without a finish reason")
}

// TestAnswerCap: an answer over model.MaxResponseBytes fails, once, with
// the limit named; it is neither retried nor held whole.
func TestAnswerCap(t *testing.T) {
	big := strings.Repeat("x", model.MaxResponseBytes/2)
	text := func(s string) string { return `{"text":"` + s + `"}` }
	whole := `{"candidates":[{"content":{"role":"model","parts":[` + text(big) + `,` + text(big+"y") + `]},"finishReason":"STOP","index":0}]}`
	event := func(s, finish string) string {
		return `data: {"candidates":[{"content":{"role":"model","parts":[` + text(s) + `]}` + finish + `,"index":0}]}` + "\n\n"
	}
	stream := event(big, "") + event(big, "") + event("y", `,"finishReason":"STOP"`)
	prov.AnswerCap(t, whole, stream)
}

// TestToolCallCap: a function call's arguments count toward the answer
// cap, whole or streamed: over model.MaxResponseBytes it fails, once, with
// the limit named.
func TestToolCallCap(t *testing.T) {
	big := strings.Repeat("x", model.MaxResponseBytes/2)
	call := func(s string) string { return `{"functionCall":{"name":"echo","args":{"text":"` + s + `"}}}` }
	whole := `{"candidates":[{"content":{"role":"model","parts":[` + call(big+big+"y") + `]},"finishReason":"STOP","index":0}]}`
	event := func(s string) string {
		return `data: {"candidates":[{"content":{"role":"model","parts":[` + call(s) + `]},"index":0}]}` + "\n\n"
	}
	stream := event(big) + event(big) + event("y")
	prov.AnswerCap(t, whole, stream)
}

// TestManyEmptyParts: a stream of parts that carry nothing fails once past
// wire.MaxParts instead of holding them all until the request timeout (the
// byte cap counts none of them). Thoughts, which the answer reads nothing
// of, are not held at all: as many of them, with their text, end in an
// answer.
func TestManyEmptyParts(t *testing.T) {
	var b strings.Builder
	for range wire.MaxParts + 1 {
		b.WriteString(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"index":0}]}` + "\n\n")
	}
	b.WriteString(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"done"}]},"finishReason":"STOP","index":0}]}` + "\n\n")
	_, err := stream(wire.NewSSE(Name, strings.NewReader(b.String())), func(string) {})
	if err == nil || !strings.Contains(err.Error(), "gemini: the model's answer has more than 131072 parts") || retry.Retryable(err) {
		t.Errorf("%d empty parts: err = %v, want too many parts, not retried", wire.MaxParts+1, err)
	}

	b.Reset()
	thought := strings.Repeat("hmm ", 20)
	for range wire.MaxParts + 1 {
		b.WriteString(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"` + thought + `","thought":true}]},"index":0}]}` + "\n\n")
	}
	b.WriteString(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"done"}]},"finishReason":"STOP","index":0}]}` + "\n\n")
	resp, err := stream(wire.NewSSE(Name, strings.NewReader(b.String())), func(string) {})
	if err != nil || resp.Text != "done" {
		t.Errorf("%d thoughts, then the answer: %v, %v", wire.MaxParts+1, resp, err)
	}
}
