package openai

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/internal/providertest"
	"github.com/fsdrun/fsd/model/retry"
)

const testKey = "sk-test-0123456789abcdef"

// prov is this package's model for the shared provider tests.
var prov = providertest.Provider{
	New: func(url string, p retry.Policy) (model.Model, error) {
		return New(Config{Model: "gpt-test", APIKey: testKey, BaseURL: url + "/v1", Retry: p})
	},
	Request:  conversation,
	OKBody:   okBody,
	OKStream: okStream,
	AsStream: asStream,
}

func conversation() *model.Request { return providertest.Conversation("call_") }

const okBody = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test",
 "choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Two calls.",
  "tool_calls":[{"id":"call_a","type":"function","function":{"name":"read_skill","arguments":"{\"id\":\"brand\"}"}},
                {"id":"call_b","type":"function","function":{"name":"listTasks","arguments":""}}]}}],
 "usage":{"prompt_tokens":120,"completion_tokens":15,"total_tokens":135}}`

func TestRequestBody(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Body: okBody})
	defer srv.Close()
	m := prov.Model(t, srv)
	if _, err := m.Generate(context.Background(), conversation()); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/chat/completions" {
		t.Errorf("request %s %s, want POST /v1/chat/completions", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
	var got any
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	var want any
	_ = json.Unmarshal([]byte(`{
	  "model": "gpt-test",
	  "messages": [
	    {"role": "system", "content": "You are the reporting assistant."},
	    {"role": "user", "content": "Prepare the report."},
	    {"role": "assistant", "content": "Reading.", "tool_calls": [
	      {"id": "call_1", "type": "function", "function": {"name": "read_skill", "arguments": "{\"id\":\"weekly-report\"}"}},
	      {"id": "call_2", "type": "function", "function": {"name": "fetch_sales", "arguments": "{\"week\":\"2025-W01\"}"}}]},
	    {"role": "tool", "tool_call_id": "call_1", "content": "{\"loaded\":true}"},
	    {"role": "tool", "tool_call_id": "call_2", "content": "exit status 1"},
	    {"role": "user", "content": "Go on."}
	  ],
	  "tools": [
	    {"type": "function", "function": {"name": "read_skill", "description": "Load a skill.",
	      "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": false}}},
	    {"type": "function", "function": {"name": "listTasks", "description": "List tasks.",
	      "parameters": {"type": "object", "properties": {}}}}
	  ]
	}`), &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
}

// wantResponse is okBody's answer, and okStream's.
func wantResponse() *model.Response {
	return &model.Response{
		Text: "Two calls.",
		Calls: []model.ToolCall{
			{ID: "call_a", Name: "read_skill", Args: json.RawMessage(`{"id":"brand"}`)},
			{ID: "call_b", Name: "listTasks", Args: json.RawMessage(`{}`)},
		},
		Usage: model.Usage{InputTokens: 120, OutputTokens: 15},
		ID:    "chatcmpl-1", Served: "gpt-test", FinishReason: "tool_calls",
	}
}

func TestResponseMapping(t *testing.T) { prov.Whole(t, wantResponse()) }

func TestFailures(t *testing.T) {
	prov.Failures(t, testKey, []providertest.Failure{
		{Name: "429 with Retry-After then success", Replies: []fakeserver.Reply{
			{Status: 429, Header: map[string]string{"Retry-After": "2"}, Body: `{"error":{"message":"Rate limit reached","type":"requests"}}`},
			{Body: okBody}}, WantCalls: 2, WantWaits: providertest.Waits{2 * time.Second}},
		{Name: "500 then success", Replies: []fakeserver.Reply{
			{Status: 500, Body: `{"error":{"message":"internal"}}`}, {Body: okBody}},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}},
		{Name: "400 is not retried", Replies: []fakeserver.Reply{
			{Status: 400, Body: `{"error":{"message":"Invalid schema for function 'read_skill'","type":"invalid_request_error","param":"tools[0]"}}`}},
			WantCalls: 1, WantErr: "openai: HTTP 400 Bad Request: Invalid schema for function 'read_skill'"},
		{Name: "401 names the problem", Replies: []fakeserver.Reply{
			{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: ` + testKey + `"}}`}},
			WantCalls: 1, WantErr: "HTTP 401 Unauthorized: Incorrect API key provided: [REDACTED]"},
		{Name: "malformed JSON", Replies: []fakeserver.Reply{{Body: `{"id": "x", "choices": [`}}, WantCalls: 1, WantErr: "openai"},
		{Name: "empty choice list", Replies: []fakeserver.Reply{{Body: `{"id":"chatcmpl-9","choices":[],"usage":{"prompt_tokens":1}}`}},
			WantCalls: 1, WantErr: "openai: the server returned no choices (completion chatcmpl-9)"},
		{Name: "stalled server hits the timeout", Replies: []fakeserver.Reply{{Stall: true}}, Retries: -1, Timeout: 500 * time.Millisecond,
			WantCalls: 1, WantErr: "openai: no complete answer within the request timeout of 500ms"},
		{Name: "retries spent", Retries: 1, Replies: []fakeserver.Reply{
			{Status: 503, Body: `{"error":{"message":"overloaded"}}`}, {Status: 503, Body: `{"error":{"message":"overloaded"}}`}},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}, WantErr: "openai: HTTP 503 Service Unavailable: overloaded (gave up after 2 attempts)"},
	})
}

// asStream is what a server streams for a reply of TestFailures: error
// statuses come before a stream starts, so they stay as they are.
func asStream(r fakeserver.Reply) fakeserver.Reply {
	switch {
	case r.Body == okBody:
		return fakeserver.Reply{Body: okStream, Chunked: true, Header: sse}
	case strings.HasPrefix(r.Body, `{"id":"chatcmpl-9","choices":[]`):
		return fakeserver.Reply{Body: "data: " + `{"id":"chatcmpl-9","object":"chat.completion.chunk","choices":[]}` + "\n\ndata: [DONE]\n\n",
			Chunked: true, Header: sse}
	case strings.HasPrefix(r.Body, `{"id": "x"`):
		return fakeserver.Reply{Body: "data: {\"id\": \"x\", \"choices\": [\n\ndata: [DONE]\n\n", Header: sse}
	}
	return r
}

var sse = providertest.SSE

const okStream = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":"Two "}}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"calls."}}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_skill","arguments":""}}]}}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"id\":"}}]}}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"listTasks","arguments":""}}]}}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"brand\"}"}}]}}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":15,"total_tokens":135}}

data: [DONE]

`

func TestStreaming(t *testing.T) {
	body := prov.Streaming(t, wantResponse())
	if body["stream"] != true || !cmp.Equal(body["stream_options"], map[string]any{"include_usage": true}) {
		t.Errorf("stream flags: stream=%v stream_options=%v", body["stream"], body["stream_options"])
	}
}

func TestCancelStopsInFlight(t *testing.T) { prov.CancelStopsInFlight(t) }

func TestArgs(t *testing.T) {
	for in, want := range map[string]string{"": `{}`, `{"a":1}`: `{"a":1}`, `{"a":`: `"{\"a\":"`} {
		if got := string(Args(in)); got != want {
			t.Errorf("Args(%q) = %s, want %s", in, got, want)
		}
	}
}
