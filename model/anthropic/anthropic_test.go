package anthropic

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

const testKey = "sk-ant-test-0123456789abcdef"

// prov is this package's model for the shared provider tests.
var prov = providertest.Provider{
	New: func(url string, p retry.Policy) (model.Model, error) {
		return New(Config{Model: "claude-test", APIKey: testKey, BaseURL: url, Retry: p})
	},
	Request:  conversation,
	OKBody:   okBody,
	OKStream: okStream,
	AsStream: asStream,
}

// conversation is the shared one with a last call that takes no
// arguments and answers nothing.
func conversation() *model.Request {
	req := providertest.Conversation("toolu_")
	req.Messages = append(req.Messages,
		model.Message{Role: model.Assistant, Calls: []model.ToolCall{{ID: "toolu_3", Name: "listTasks"}}},
		model.Message{Role: model.Tool, CallID: "toolu_3", Name: "listTasks", Text: ""})
	return req
}

const okBody = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","stop_reason":"tool_use",
 "content":[{"type":"text","text":"Two calls."},
  {"type":"tool_use","id":"toolu_a","name":"read_skill","input":{"id":"brand"}},
  {"type":"tool_use","id":"toolu_b","name":"listTasks","input":{}}],
 "usage":{"input_tokens":100,"cache_read_input_tokens":20,"output_tokens":15}}`

func TestRequestBody(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Body: okBody})
	defer srv.Close()
	if _, err := prov.Model(t, srv).Generate(context.Background(), conversation()); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Method != "POST" || r.Path != "/v1/messages" {
		t.Errorf("request %s %s, want POST /v1/messages", r.Method, r.Path)
	}
	if got := r.Header.Get("X-Api-Key"); got != testKey {
		t.Errorf("x-api-key = %q", got)
	}
	if r.Header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	var got any
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	var want any
	if err := json.Unmarshal([]byte(`{
	  "model": "claude-test",
	  "max_tokens": 8192,
	  "system": [{"type": "text", "text": "You are the reporting assistant."}],
	  "messages": [
	    {"role": "user", "content": [{"type": "text", "text": "Prepare the report."}]},
	    {"role": "assistant", "content": [
	      {"type": "text", "text": "Reading."},
	      {"type": "tool_use", "id": "toolu_1", "name": "read_skill", "input": {"id": "weekly-report"}},
	      {"type": "tool_use", "id": "toolu_2", "name": "fetch_sales", "input": {"week": "2025-W01"}}]},
	    {"role": "user", "content": [
	      {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "{\"loaded\":true}"}]},
	      {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true, "content": [{"type": "text", "text": "exit status 1"}]},
	      {"type": "text", "text": "Go on."}]},
	    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_3", "name": "listTasks", "input": {}}]},
	    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_3"}]}
	  ],
	  "tools": [
	    {"name": "read_skill", "description": "Load a skill.",
	     "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": false}},
	    {"name": "listTasks", "description": "List tasks.", "input_schema": {"type": "object", "properties": {}}}
	  ]
	}`), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
}

func wantResponse() *model.Response {
	return &model.Response{
		Text: "Two calls.",
		Calls: []model.ToolCall{
			{ID: "toolu_a", Name: "read_skill", Args: json.RawMessage(`{"id":"brand"}`)},
			{ID: "toolu_b", Name: "listTasks", Args: json.RawMessage(`{}`)},
		},
		Usage: model.Usage{InputTokens: 120, OutputTokens: 15, CachedInputTokens: 20},
		ID:    "msg_1", Served: "claude-test", FinishReason: "tool_use", MaxTokens: DefaultMaxTokens,
	}
}

func TestResponseMapping(t *testing.T) { prov.Whole(t, wantResponse()) }

const okStream = "event: message_start\n" +
	`data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"usage":{"input_tokens":100,"cache_read_input_tokens":20,"output_tokens":1}}}` + "\n\n" +
	"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
	"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
	"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Two "}}` + "\n\n" +
	"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"calls."}}` + "\n\n" +
	"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n" +
	"event: content_block_start\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"read_skill","input":{}}}` + "\n\n" +
	"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"id\":"}}` + "\n\n" +
	"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \"brand\"}"}}` + "\n\n" +
	"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":1}` + "\n\n" +
	"event: content_block_start\n" + `data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_b","name":"listTasks","input":{}}}` + "\n\n" +
	"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":2}` + "\n\n" +
	"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":15}}` + "\n\n" +
	"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"

var sse = providertest.SSE

func TestStreaming(t *testing.T) {
	want := wantResponse()
	want.Calls[0].Args = json.RawMessage(`{"id": "brand"}`) // as streamed
	if body := prov.Streaming(t, want); body["stream"] != true {
		t.Errorf("stream = %v, want true", body["stream"])
	}
}

func TestFailures(t *testing.T) {
	errBody := func(typ, msg string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"}}`
	}
	prov.Failures(t, testKey, []providertest.Failure{
		{Name: "429 with Retry-After then success", Replies: []fakeserver.Reply{
			{Status: 429, Header: map[string]string{"Retry-After": "7"}, Body: errBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")},
			{Body: okBody}}, WantCalls: 2, WantWaits: providertest.Waits{7 * time.Second}},
		{Name: "529 overloaded then success", Replies: []fakeserver.Reply{
			{Status: 529, Body: errBody("overloaded_error", "Overloaded")}, {Body: okBody}},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}},
		{Name: "500 then success", Replies: []fakeserver.Reply{
			{Status: 500, Body: errBody("api_error", "Internal server error")}, {Body: okBody}},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}},
		{Name: "400 is not retried", Replies: []fakeserver.Reply{
			{Status: 400, Body: errBody("invalid_request_error", "tools.0.input_schema: JSON schema is invalid")}},
			WantCalls: 1, WantErr: "anthropic: HTTP 400 Bad Request: tools.0.input_schema: JSON schema is invalid"},
		{Name: "401 names the problem", Replies: []fakeserver.Reply{
			{Status: 401, Body: errBody("authentication_error", "invalid x-api-key "+testKey)}},
			WantCalls: 1, WantErr: "anthropic: HTTP 401 Unauthorized: invalid x-api-key [REDACTED]"},
		{Name: "malformed JSON", Replies: []fakeserver.Reply{{Body: `{"id":"msg_1","content":[`}}, WantCalls: 1, WantErr: "not valid JSON"},
		{Name: "stalled server hits the timeout", Replies: []fakeserver.Reply{{Stall: true}}, Retries: -1, Timeout: 500 * time.Millisecond,
			WantCalls: 1, WantErr: "anthropic: no complete answer within the request timeout of 500ms"},
	})
}

// asStream is what a server streams for a reply of TestFailures: error
// statuses come before a stream starts, so they stay as they are.
func asStream(r fakeserver.Reply) fakeserver.Reply {
	switch {
	case r.Body == okBody:
		return fakeserver.Reply{Body: okStream, Chunked: true, Header: sse}
	case strings.HasPrefix(r.Body, `{"id":"msg_1","content":[`):
		return fakeserver.Reply{Body: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\n\n", Header: sse}
	}
	return r
}

func TestStreamErrorEvent(t *testing.T) {
	overloaded := "event: message_start\n" +
		`data: {"type":"message_start","message":{"id":"msg_0","type":"message","role":"assistant","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}` + "\n\n" +
		"event: error\n" + `data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}` + "\n\n"
	srv := fakeserver.New(
		fakeserver.Reply{Body: overloaded, Chunked: true, Header: sse},
		fakeserver.Reply{Body: okStream, Chunked: true, Header: sse})
	defer srv.Close()
	req := conversation()
	req.OnText = func(string) {}
	got, err := prov.Model(t, srv).Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("an overload inside the stream should be retried: %v", err)
	}
	if got.Text != "Two calls." || len(srv.Requests()) != 2 {
		t.Errorf("text %q after %d requests", got.Text, len(srv.Requests()))
	}
}

func TestCancelStopsInFlight(t *testing.T) { prov.CancelStopsInFlight(t) }
