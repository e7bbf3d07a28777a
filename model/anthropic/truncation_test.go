package anthropic

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/internal/providertest"
	"github.com/fsdrun/fsd/model/internal/wire"
	"github.com/fsdrun/fsd/model/retry"
)

// TestTruncatedStream: a stream that stops before message_stop is not an
// answer. It is retried, and the consumer hears a reset before the retry's
// text so it never shows "Two Two calls.".
func TestTruncatedStream(t *testing.T) {
	stop := strings.Index(okStream, "event: message_stop")
	afterText := strings.Index(okStream, "event: content_block_stop")
	both := []string{"Two ", "calls.", "<reset>", "Two ", "calls."}
	prov.TruncatedStream(t, []providertest.Cut{
		{Name: "chunked body that ends cleanly", First: fakeserver.Reply{Body: okStream[:stop], Chunked: true, Header: sse}, Deltas: both},
		{Name: "connection closed mid-event", First: fakeserver.Reply{Body: okStream[:afterText+30], Abort: true, Header: sse}, Deltas: both},
		{Name: "no message at all", First: fakeserver.Reply{Body: "", Header: sse}, Deltas: []string{"Two ", "calls."}},
	}, "anthropic: the answer stream ended early, without message_stop")
}

// TestAnswerCap: an answer over model.MaxResponseBytes fails, once, with
// the limit named.
func TestAnswerCap(t *testing.T) {
	big := strings.Repeat("x", model.MaxResponseBytes/2)
	whole := `{"id":"m","content":[{"type":"text","text":"` + big + `"},{"type":"text","text":"` + big + `y"}],"usage":{}}`
	delta := func(s string) string {
		return "event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + s + `"}}` + "\n\n"
	}
	stream := "event: message_start\n" + `data: {"type":"message_start","message":{"id":"m","content":[],"usage":{}}}` + "\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
		delta(big) + delta(big) + delta("y") +
		"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"
	prov.AnswerCap(t, whole, stream)
}

// TestToolCallCap: a tool call's input counts toward the answer cap, whole
// or streamed as input_json deltas: over model.MaxResponseBytes it fails,
// once, with the limit named. The stream ends, cut, after the deltas: the
// cap stops it as they come, before it would be held whole (a cut stream
// is retried).
func TestToolCallCap(t *testing.T) {
	big := strings.Repeat("x", model.MaxResponseBytes/2)
	whole := `{"id":"m","content":[{"type":"tool_use","id":"t1","name":"echo","input":{"text":"` + big + big + `y"}}],"stop_reason":"tool_use","usage":{}}`
	delta := func(s string) string {
		return "event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"` + s + `"}}` + "\n\n"
	}
	stream := "event: message_start\n" + `data: {"type":"message_start","message":{"id":"m","content":[],"usage":{}}}` + "\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"echo","input":{}}}` + "\n\n" +
		delta(`{\"text\":\"`+big) + delta(big) + delta(`y\"}`)
	prov.AnswerCap(t, whole, stream)
}

// TestManyDeltasLinear: a long answer streamed in many small deltas, as
// models stream tokens, is assembled in memory linear in its size. Text
// was appended to the block's string delta by delta, copying the text so
// far each time: 1 MB in 10,000 deltas allocated about 5 GB, and an
// answer of a few MB could not finish within the request timeout.
func TestManyDeltasLinear(t *testing.T) {
	piece := strings.Repeat("abcdefghij", 10)
	var b strings.Builder
	b.WriteString("event: message_start\n" + `data: {"type":"message_start","message":{"id":"m","content":[],"usage":{}}}` + "\n\n")
	b.WriteString("event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n")
	const n = 10000
	for range n {
		b.WriteString("event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + piece + `"}}` + "\n\n")
	}
	// As many blocks again, each a piece: the blocks' text is joined once.
	for i := 1; i <= n; i++ {
		b.WriteString("event: content_block_start\n" + `data: {"type":"content_block_start","index":` + strconv.Itoa(i) + `,"content_block":{"type":"text","text":"` + piece + `"}}` + "\n\n")
	}
	b.WriteString("event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n")
	body := b.String()

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := stream(wire.NewSSE(Name, strings.NewReader(body)), func(string) {})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * n * len(piece); len(resp.Text) != want {
		t.Fatalf("text of %d bytes, want %d", len(resp.Text), want)
	}
	// The events themselves are about 3 MB; 100 MB leaves room for every
	// decode, and is 1/50 of what the copying took.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 100<<20 {
		t.Errorf("assembling a %d-byte answer allocated %d MB", len(resp.Text), alloc>>20)
	}
}

// TestManyEmptyParts: a stream of content blocks that carry nothing fails
// once past wire.MaxParts instead of holding them all until the request
// timeout (the byte cap counts none of them).
func TestManyEmptyParts(t *testing.T) {
	var b strings.Builder
	b.WriteString("event: message_start\n" + `data: {"type":"message_start","message":{"id":"m","content":[],"usage":{}}}` + "\n\n")
	for i := 0; i <= wire.MaxParts; i++ {
		b.WriteString(`data: {"type":"content_block_start","index":` + strconv.Itoa(i) + `,"content_block":{"type":"tool_use","id":"","name":""}}` + "\n\n")
	}
	b.WriteString(`data: {"type":"message_stop"}` + "\n\n")
	_, err := stream(wire.NewSSE(Name, strings.NewReader(b.String())), func(string) {})
	if err == nil || !strings.Contains(err.Error(), "anthropic: the model's answer has more than 131072 parts") || retry.Retryable(err) {
		t.Errorf("%d empty blocks: err = %v, want too many parts, not retried", wire.MaxParts+1, err)
	}
}

// TestStopWithoutStart: message_stop with no message_start before it is no
// answer (no id, no stop reason, no usage), not an empty one the run
// finishes on: it fails, naming the malformed stream.
func TestStopWithoutStart(t *testing.T) {
	_, err := stream(wire.NewSSE(Name, strings.NewReader("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")), func(string) {})
	if err == nil || !strings.Contains(err.Error(), "anthropic: malformed stream: message_stop without message_start") {
		t.Errorf("err = %v, want a malformed stream", err)
	}
}
