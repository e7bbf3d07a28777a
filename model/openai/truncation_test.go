package openai

import (
	"strings"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/internal/providertest"
)

// TestTruncatedStream: a stream that stops before a finish reason or
// [DONE] is not an answer. It is retried, and the consumer hears a reset
// before the retry's text so it never shows "Two Two calls.".
func TestTruncatedStream(t *testing.T) {
	cut := strings.Index(okStream, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason"`)
	firstEvent := strings.Index(okStream[1:], "data: ") + 1
	both := []string{"Two ", "calls.", "<reset>", "Two ", "calls."}
	prov.TruncatedStream(t, []providertest.Cut{
		{Name: "chunked body that ends cleanly", First: fakeserver.Reply{Body: okStream[:cut], Chunked: true, Header: sse}, Deltas: both},
		{Name: "connection closed mid-event", First: fakeserver.Reply{Body: okStream[:cut+40], Abort: true, Header: sse}, Deltas: both},
		{Name: "one event, then a clean end", First: fakeserver.Reply{Body: okStream[:firstEvent], Header: sse},
			Deltas: []string{"Two ", "<reset>", "Two ", "calls."}},
	}, "openai: the answer stream ended early, without a finish reason or [DONE]")
}

// TestAnswerCap: an answer over model.MaxResponseBytes fails, once, with
// the limit named; it is neither retried nor held whole.
func TestAnswerCap(t *testing.T) {
	big := strings.Repeat("x", model.MaxResponseBytes/2)
	whole := `{"id":"c","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"` + big + big + `y"}}]}`
	chunk := `data: {"id":"c","choices":[{"index":0,"delta":{"content":"` + big + `"}}]}` + "\n\n"
	stream := chunk + chunk + `data: {"id":"c","choices":[{"index":0,"delta":{"content":"y"}}]}` + "\n\n" + "data: [DONE]\n\n"
	prov.AnswerCap(t, whole, stream)
}

// TestToolCallCap: a tool call's arguments count toward the answer cap,
// whole or streamed in pieces: over model.MaxResponseBytes it fails, once,
// with the limit named. The stream ends, cut, after the pieces: the cap
// stops it as they come, before it would be held whole (a cut stream is
// retried).
func TestToolCallCap(t *testing.T) {
	big := strings.Repeat("x", model.MaxResponseBytes/2)
	whole := `{"id":"c","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"echo","arguments":"{\"text\":\"` + big + big + `y\"}"}}]}}]}`
	chunk := func(call string) string {
		return `data: {"id":"c","choices":[{"index":0,"delta":{"tool_calls":[` + call + `]}}]}` + "\n\n"
	}
	stream := chunk(`{"index":0,"id":"t1","type":"function","function":{"name":"echo","arguments":"{\"text\":\"`+big+`"}}`) +
		chunk(`{"index":0,"function":{"arguments":"`+big+`"}}`) + chunk(`{"index":0,"function":{"arguments":"y\"}"}}`)
	prov.AnswerCap(t, whole, stream)
}
