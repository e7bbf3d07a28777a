package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/fsdrun/fsd/internal/promptcache"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
)

// With Cache set, the request marks four prompt-cache breakpoints: the
// last tool, the system block, the end of the previous request (the user
// message before the last assistant message) and the last block of the
// last message; without it, none. Cache reads and writes come back in the
// usage, plain and streamed.
func TestCacheControl(t *testing.T) {
	for _, on := range []bool{true, false} {
		req := conversation()
		req.Cache, req.CacheKey = on, "fsd/run/host"
		resp, sent := prov.Call(t, fakeserver.Reply{Body: `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],
 "stop_reason":"end_turn","usage":{"input_tokens":10,"cache_creation_input_tokens":30,"cache_read_input_tokens":900,"output_tokens":5}}`}, req)
		if u := resp.Usage; u.InputTokens != 940 || u.CachedInputTokens != 900 || u.CacheWriteTokens != 30 || u.OutputTokens != 5 {
			t.Errorf("usage %+v, want 940 in of which 900 read from and 30 written to the cache, 5 out", u)
		}
		var body struct {
			System []map[string]any `json:"system"`
			Tools  []map[string]any `json:"tools"`
			Msgs   []struct {
				Role    string           `json:"role"`
				Content []map[string]any `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(sent, &body); err != nil {
			t.Fatal(err)
		}
		last := func(i int) any {
			c := body.Msgs[i].Content
			return c[len(c)-1]["cache_control"]
		}
		n := len(body.Msgs)
		if body.Msgs[n-2].Role != "assistant" || body.Msgs[n-3].Role != "user" {
			t.Fatalf("the conversation does not end user, assistant, user")
		}
		marks := map[string]any{
			"last tool":        body.Tools[len(body.Tools)-1]["cache_control"],
			"system":           body.System[0]["cache_control"],
			"previous request": last(n - 3),
			"last message":     last(n - 1),
			"first tool":       body.Tools[0]["cache_control"],
			"first message":    last(0),
			"last assistant":   last(n - 2),
		}
		for where, cc := range marks {
			want := on && where != "first tool" && where != "first message" && where != "last assistant"
			if got := cc != nil; got != want {
				t.Errorf("cache %v: cache_control on the %s = %v, want %v", on, where, cc, want)
			}
		}
		var raw map[string]any
		_ = json.Unmarshal(sent, &raw)
		if _, ok := raw["prompt_cache_key"]; ok {
			t.Error("an Anthropic request carries OpenAI's prompt_cache_key")
		}
	}
}

// Streamed answers report cache reads and writes in message_start, and
// newer API versions again, cumulatively, in message_delta: either way they
// come back in the usage.
func TestCacheUsageStreamed(t *testing.T) {
	const text = "event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}` + "\n\n" +
		"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n"
	start := func(usage string) string {
		return "event: message_start\n" + `data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"usage":` + usage + `}}` + "\n\n"
	}
	end := func(usage string) string {
		return "event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":` + usage + `}` + "\n\n" +
			"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"
	}
	for _, tc := range []struct {
		name, stream string
	}{
		{"in message_start", start(`{"input_tokens":10,"cache_creation_input_tokens":30,"cache_read_input_tokens":900,"output_tokens":1}`) + text + end(`{"output_tokens":5}`)},
		{"again in message_delta", start(`{"input_tokens":10,"cache_creation_input_tokens":30,"cache_read_input_tokens":900,"output_tokens":1}`) + text +
			end(`{"input_tokens":10,"cache_creation_input_tokens":30,"cache_read_input_tokens":900,"output_tokens":5}`)},
		{"only in message_delta", start(`{"input_tokens":10,"output_tokens":1}`) + text +
			end(`{"input_tokens":10,"cache_creation_input_tokens":30,"cache_read_input_tokens":900,"output_tokens":5}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := conversation()
			req.Cache, req.OnText = true, func(string) {}
			resp, _ := prov.Call(t, fakeserver.Reply{Body: tc.stream, Chunked: true, Header: sse}, req)
			want := model.Usage{InputTokens: 940, OutputTokens: 5, CachedInputTokens: 900, CacheWriteTokens: 30}
			if resp.Usage != want {
				t.Errorf("usage %+v, want %+v", resp.Usage, want)
			}
		})
	}
}

// A generator's next request is read back from the cache up to the whole
// previous request, even when the step between them added more blocks
// than the cache looks back over (a response with many parallel calls):
// the breakpoint at the previous request's end is what finds it.
func TestCacheReadsBackThePreviousRequest(t *testing.T) {
	ok := fakeserver.Reply{Body: okBody}
	srv := fakeserver.New(ok, ok, ok)
	defer srv.Close()
	m := prov.Model(t, srv)
	req := conversation()
	req.Cache = true
	var bodies [][]byte
	for step := range 3 {
		if _, err := m.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, srv.Requests()[step].Body)
		// The next step: 12 parallel calls and their results, 24 blocks.
		next := *req
		next.Messages = append([]model.Message(nil), req.Messages...)
		var calls []model.ToolCall
		for i := range 12 {
			calls = append(calls, model.ToolCall{ID: fmt.Sprintf("toolu_%d_%d", step, i), Name: "listTasks", Args: json.RawMessage(`{}`)})
		}
		next.Messages = append(next.Messages, model.Message{Role: model.Assistant, Calls: calls})
		for _, c := range calls {
			next.Messages = append(next.Messages, model.Message{Role: model.Tool, CallID: c.ID, Name: c.Name, Text: "no tasks"})
		}
		req = &next
	}
	var cache promptcache.Cache
	var prev promptcache.Served
	for i, b := range bodies {
		s, err := cache.Send(b)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && s.Read < len(prev.Blocks) {
			t.Errorf("request %d: the cache serves %d blocks, want the previous request's %d", i+1, s.Read, len(prev.Blocks))
		}
		prev = s
	}
}
