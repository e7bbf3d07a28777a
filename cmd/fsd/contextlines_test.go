package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeAnthropic speaks the Messages wire format, plain or streamed (SSE),
// answering with replies in order.
func fakeAnthropic(t *testing.T, replies []fakeReply) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var bodies []string
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(body))
		i := n
		n++
		mu.Unlock()
		if i >= len(replies) {
			http.Error(w, `{"type":"error","error":{"type":"api_error","message":"no more replies"}}`, http.StatusInternalServerError)
			return
		}
		rep := replies[i]
		var content []map[string]any
		if rep.text != "" {
			content = append(content, map[string]any{"type": "text", "text": rep.text})
		}
		for j, c := range rep.calls {
			content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", i, j), "name": c.name, "input": json.RawMessage(c.args)})
		}
		stop := "end_turn"
		if len(rep.calls) > 0 {
			stop = "tool_use"
		}
		if !strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "msg", "type": "message", "role": "assistant", "model": "claude-test",
				"content": content, "stop_reason": stop, "usage": map[string]any{"input_tokens": 100, "output_tokens": 10}})
			return
		}
		writeAnthropicStream(w, content, stop)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), bodies...) }
}

// lifecycleReplies drive the lifecycle example through a real provider:
// a read, a tool, a read beside a tool call (its line waits for the
// sibling's result), two reads in one response where the second evicts
// (both lines after both results), the evicted skill's tool refused, an
// answer.
var lifecycleReplies = []fakeReply{
	{calls: []fakeCall{{"read_skill", `{"id":"weather"}`}}},
	{calls: []fakeCall{{"get_weather", `{"city":"Lisbon"}`}}},
	{calls: []fakeCall{{"read_skill", `{"id":"notes"}`}, {"remember", `{"key":"likes","value":"the coast"}`}}},
	{calls: []fakeCall{{"read_skill", `{"id":"calendar"}`}, {"read_skill", `{"id":"glossary"}`}}},
	{calls: []fakeCall{{"get_weather", `{"city":"Lisbon"}`}}},
	{text: "Saturday: the coast."},
}

// Context lines reach each provider as a valid body: OpenAI gets them as
// user messages after the tool messages of their group; Anthropic as text
// blocks after the tool_result blocks of the user turn, roles alternating.
func TestContextLinesOnTheWire(t *testing.T) {
	wf := "../../examples/lifecycle/lifecycle.workflow.yaml"
	t.Run("openai", func(t *testing.T) {
		srv, bodies := fakeOpenAI(t, lifecycleReplies)
		t.Setenv("OPENAI_API_KEY", "sk-test")
		t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
		code, out, errs := fsd(t, "run", wf, "--model", "openai/gpt-test", "--runs-dir", filepath.Join(t.TempDir(), "runs"))
		if code != exitOK || strings.TrimSpace(out) != "Saturday: the coast." {
			t.Fatalf("exit %d: %s%s", code, out, errs)
		}
		reqs := bodies()
		last := reqs[len(reqs)-1]
		last = last[:strings.LastIndexByte(last, '\n')] // the fake appends the auth header
		lines := checkOpenAIBody(t, last)
		checkLifecycleLines(t, lines)
	})
	t.Run("anthropic", func(t *testing.T) {
		srv, bodies := fakeAnthropic(t, lifecycleReplies)
		t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
		t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
		code, out, errs := fsd(t, "run", wf, "--model", "anthropic/claude-test", "--runs-dir", filepath.Join(t.TempDir(), "runs"))
		if code != exitOK || strings.TrimSpace(out) != "Saturday: the coast." {
			t.Fatalf("exit %d: %s%s", code, out, errs)
		}
		reqs := bodies()
		lines := checkAnthropicBody(t, reqs[len(reqs)-1])
		checkLifecycleLines(t, lines)
	})
}

// checkLifecycleLines: the lines of the four loads and the eviction, in
// order, with the evicted skill's preview still there.
func checkLifecycleLines(t *testing.T, lines []string) {
	t.Helper()
	want := []string{
		"[fsd context] loaded skill weather ",
		"[fsd context] loaded skill notes ",
		"[fsd context] loaded skill calendar ",
		"[fsd context] unloaded skill weather ",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d context lines on the wire, want %d: %q", len(lines), len(want), lines)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
		}
	}
	if !strings.Contains(lines[0], "  instructions") || !strings.Contains(lines[3], "\n[fsd context] loaded skill glossary ") {
		t.Errorf("weather's preview or glossary's load missing: %q", lines)
	}
}

// checkOpenAIBody validates a chat completions body: system first, then a
// user message; every assistant message with tool calls followed at once
// by one tool message per call, in order; no tool message elsewhere. It
// returns the context lines (user messages written by fsd).
func checkOpenAIBody(t *testing.T, body string) []string {
	t.Helper()
	var b struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		t.Fatalf("body: %v\n%s", err, body)
	}
	ms := b.Messages
	if len(ms) < 2 || ms[0].Role != "system" || ms[1].Role != "user" {
		t.Fatalf("body does not start system, user: %s", body)
	}
	var lines []string
	for i := 1; i < len(ms); i++ {
		switch ms[i].Role {
		case "tool":
			t.Errorf("message %d: tool message %q not right after its call", i, ms[i].ToolCallID)
		case "assistant":
			for k, c := range ms[i].ToolCalls {
				j := i + 1 + k
				if j >= len(ms) || ms[j].Role != "tool" || ms[j].ToolCallID != c.ID {
					t.Errorf("message %d: call %s not answered by the next message", i, c.ID)
				}
			}
			i += len(ms[i].ToolCalls)
		case "user":
			if s, ok := ms[i].Content.(string); ok && strings.HasPrefix(s, "[fsd context] ") {
				lines = append(lines, s)
			}
		default:
			t.Errorf("message %d: role %q", i, ms[i].Role)
		}
	}
	return lines
}

// checkAnthropicBody validates a Messages body: roles alternate starting
// with user; the user turn after an assistant turn with tool_use blocks
// opens with exactly their tool_result blocks, in order, and any text
// (context lines) comes after them. It returns the context lines.
func checkAnthropicBody(t *testing.T, body string) []string {
	t.Helper()
	type block struct {
		Type      string `json:"type"`
		Text      string `json:"text"`
		ID        string `json:"id"`
		ToolUseID string `json:"tool_use_id"`
	}
	var b struct {
		Messages []struct {
			Role    string  `json:"role"`
			Content []block `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		t.Fatalf("body: %v\n%s", err, body)
	}
	var lines []string
	var pending []string // tool_use ids the next user turn must answer first
	for i, m := range b.Messages {
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if m.Role != want {
			t.Fatalf("message %d is %s, want %s: roles must alternate from user", i, m.Role, want)
		}
		if len(m.Content) == 0 {
			t.Errorf("message %d has no content", i)
		}
		if m.Role == "assistant" {
			pending = nil
			for _, c := range m.Content {
				if c.Type == "tool_use" {
					pending = append(pending, c.ID)
				}
			}
			continue
		}
		for k, c := range m.Content {
			switch {
			case k < len(pending):
				if c.Type != "tool_result" || c.ToolUseID != pending[k] {
					t.Errorf("message %d block %d: %s %q, want the tool_result of %s", i, k, c.Type, c.ToolUseID, pending[k])
				}
			case c.Type != "text":
				t.Errorf("message %d block %d: %s after the results, want text", i, k, c.Type)
			case strings.HasPrefix(c.Text, "[fsd context] "):
				lines = append(lines, c.Text)
			}
		}
		pending = nil
	}
	if len(pending) > 0 {
		t.Errorf("calls %v without results", pending)
	}
	return lines
}

// writeAnthropicStream answers with content as an Anthropic messages event
// stream, flushed event by event, ending in stop.
func writeAnthropicStream(w http.ResponseWriter, content []map[string]any, stop string) {
	writeAnthropicStreamUsage(w, content, stop, map[string]any{"input_tokens": 100, "output_tokens": 1}, map[string]any{"output_tokens": 10})
}

// writeAnthropicStreamUsage is writeAnthropicStream with the usage of
// message_start and of message_delta given.
func writeAnthropicStreamUsage(w http.ResponseWriter, content []map[string]any, stop string, start, delta map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(typ string, v map[string]any) {
		v["type"] = typ
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		w.(http.Flusher).Flush()
	}
	ev("message_start", map[string]any{"message": map[string]any{"id": "msg", "type": "message", "role": "assistant", "model": "claude-test",
		"content": []any{}, "usage": start}})
	for k, b := range content {
		if b["type"] == "text" {
			ev("content_block_start", map[string]any{"index": k, "content_block": map[string]any{"type": "text", "text": ""}})
			ev("content_block_delta", map[string]any{"index": k, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		} else {
			ev("content_block_start", map[string]any{"index": k, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			ev("content_block_delta", map[string]any{"index": k, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(b["input"].(json.RawMessage))}})
		}
		ev("content_block_stop", map[string]any{"index": k})
	}
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop}, "usage": delta})
	ev("message_stop", map[string]any{})
}
