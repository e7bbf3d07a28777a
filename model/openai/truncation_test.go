package openai

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/internal/providertest"
	"github.com/fsdrun/fsd/model/internal/wire"
	"github.com/fsdrun/fsd/model/retry"
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

// TestManyEmptyParts: a stream of tool calls that carry nothing, each at
// a new index, fails once past wire.MaxParts instead of holding them all
// until the request timeout (the byte cap counts none of them). So do
// the Responses API's items marked done: past wire.MaxParts, or past
// twice the byte cap held (they repeat the deltas' text).
func TestManyEmptyParts(t *testing.T) {
	var b strings.Builder
	for i := 0; i <= wire.MaxParts; i++ {
		b.WriteString(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":` + strconv.Itoa(i) + `}]}}]}` + "\n\n")
	}
	b.WriteString(`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n")
	_, err := stream(wire.NewSSE(Name, strings.NewReader(b.String())), func(string) {})
	if err == nil || !strings.Contains(err.Error(), "openai: the model's answer has more than 131072 parts") || retry.Retryable(err) {
		t.Errorf("%d empty calls: err = %v, want too many parts, not retried", wire.MaxParts+1, err)
	}

	b.Reset()
	for i := 0; i <= wire.MaxParts; i++ {
		b.WriteString(`data: {"type":"response.output_item.done","output_index":` + strconv.Itoa(i) + `,"item":{}}` + "\n\n")
	}
	_, err = streamResponse(wire.NewSSE(ResponsesName, strings.NewReader(b.String())), func(string) {}, "gpt-x")
	if err == nil || !strings.Contains(err.Error(), "more than 131072 parts") || retry.Retryable(err) {
		t.Errorf("%d items done: err = %v, want too many parts, not retried", wire.MaxParts+1, err)
	}

	b.Reset()
	big := strings.Repeat("x", 6<<20)
	for i := range 3 {
		b.WriteString(`data: {"type":"response.output_item.done","output_index":` + strconv.Itoa(i) + `,"item":{"type":"message","content":[{"type":"output_text","text":"` + big + `"}]}}` + "\n\n")
	}
	_, err = streamResponse(wire.NewSSE(ResponsesName, strings.NewReader(b.String())), func(string) {}, "gpt-x")
	if err == nil || !strings.Contains(err.Error(), "larger than the 8 MiB limit") {
		t.Errorf("18 MiB of items done: err = %v, want the answer cap", err)
	}
}
