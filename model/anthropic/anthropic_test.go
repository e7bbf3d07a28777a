package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/retry"
)

const testKey = "sk-ant-test-0123456789abcdef"

type waits []time.Duration

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	*w = append(*w, d)
	return ctx.Err()
}

func newModel(t *testing.T, srv *fakeserver.Server, w *waits) *Model {
	t.Helper()
	if w == nil {
		w = &waits{}
	}
	m, err := New(Config{
		Model: "claude-test", APIKey: testKey, BaseURL: srv.URL,
		Retry: retry.Policy{Sleep: w.sleep, Jitter: func(d time.Duration) time.Duration { return d }, Timeout: 5 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func conversation() *model.Request {
	return &model.Request{
		Context: "You are the reporting assistant.",
		Messages: []model.Message{
			{Role: model.User, Text: "Prepare the report."},
			{Role: model.Assistant, Text: "Reading.", Calls: []model.ToolCall{
				{ID: "toolu_1", Name: "read_skill", Args: json.RawMessage(`{"id":"weekly-report"}`)},
				{ID: "toolu_2", Name: "fetch_sales", Args: json.RawMessage(`{"week":"2025-W01"}`)},
			}},
			{Role: model.Tool, CallID: "toolu_1", Name: "read_skill", Text: `{"loaded":true}`},
			{Role: model.Tool, CallID: "toolu_2", Name: "fetch_sales", Text: "exit status 1", IsError: true},
			{Role: model.User, Text: "Go on."},
			{Role: model.Assistant, Calls: []model.ToolCall{{ID: "toolu_3", Name: "listTasks"}}},
			{Role: model.Tool, CallID: "toolu_3", Name: "listTasks", Text: ""},
		},
		Tools: []model.ToolDef{
			{Name: "read_skill", Description: "Load a skill.", Parameters: json.RawMessage(
				`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`)},
			{Name: "listTasks", Description: "List tasks."},
		},
	}
}

const okBody = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","stop_reason":"tool_use",
 "content":[{"type":"text","text":"Two calls."},
  {"type":"tool_use","id":"toolu_a","name":"read_skill","input":{"id":"brand"}},
  {"type":"tool_use","id":"toolu_b","name":"listTasks","input":{}}],
 "usage":{"input_tokens":100,"cache_read_input_tokens":20,"output_tokens":15}}`

func TestRequestBody(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Body: okBody})
	defer srv.Close()
	if _, err := newModel(t, srv, nil).Generate(context.Background(), conversation()); err != nil {
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
	}
}

func TestResponseMapping(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Body: okBody})
	defer srv.Close()
	got, err := newModel(t, srv, nil).Generate(context.Background(), conversation())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantResponse(), got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

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

var sse = map[string]string{"Content-Type": "text/event-stream"}

func TestStreaming(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Body: okStream, Chunked: true, Header: sse})
	defer srv.Close()
	var deltas []string
	req := conversation()
	req.OnText = func(d string) { deltas = append(deltas, d) }
	got, err := newModel(t, srv, nil).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := wantResponse()
	want.Calls[0].Args = json.RawMessage(`{"id": "brand"}`) // as streamed
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Two ", "calls."}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	var body map[string]any
	_ = json.Unmarshal(srv.Requests()[0].Body, &body)
	if body["stream"] != true {
		t.Errorf("stream = %v, want true", body["stream"])
	}
}

func TestFailures(t *testing.T) {
	errBody := func(typ, msg string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"}}`
	}
	tests := []struct {
		name      string
		replies   []fakeserver.Reply
		retries   int
		timeout   time.Duration
		wantCalls int
		wantWaits waits
		wantErr   string
	}{
		{name: "429 with Retry-After then success", replies: []fakeserver.Reply{
			{Status: 429, Header: map[string]string{"Retry-After": "7"}, Body: errBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")},
			{Body: okBody}}, wantCalls: 2, wantWaits: waits{7 * time.Second}},
		{name: "529 overloaded then success", replies: []fakeserver.Reply{
			{Status: 529, Body: errBody("overloaded_error", "Overloaded")}, {Body: okBody}},
			wantCalls: 2, wantWaits: waits{retry.DefaultBaseDelay}},
		{name: "500 then success", replies: []fakeserver.Reply{
			{Status: 500, Body: errBody("api_error", "Internal server error")}, {Body: okBody}},
			wantCalls: 2, wantWaits: waits{retry.DefaultBaseDelay}},
		{name: "400 is not retried", replies: []fakeserver.Reply{
			{Status: 400, Body: errBody("invalid_request_error", "tools.0.input_schema: JSON schema is invalid")}},
			wantCalls: 1, wantErr: "anthropic: HTTP 400 Bad Request: tools.0.input_schema: JSON schema is invalid"},
		{name: "401 names the problem", replies: []fakeserver.Reply{
			{Status: 401, Body: errBody("authentication_error", "invalid x-api-key "+testKey)}},
			wantCalls: 1, wantErr: "anthropic: HTTP 401 Unauthorized: invalid x-api-key [REDACTED]"},
		{name: "malformed JSON", replies: []fakeserver.Reply{{Body: `{"id":"msg_1","content":[`}}, wantCalls: 1, wantErr: "not valid JSON"},
		{name: "stalled server hits the timeout", replies: []fakeserver.Reply{{Stall: true}}, retries: -1, timeout: 500 * time.Millisecond,
			wantCalls: 1, wantErr: "anthropic: no complete answer within the request timeout of 500ms"},
	}
	for _, tt := range tests {
		for _, streaming := range []bool{false, true} {
			name := tt.name
			if streaming {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				replies := tt.replies
				if streaming {
					replies = asStream(replies)
				}
				srv := fakeserver.New(replies...)
				defer srv.Close()
				w := &waits{}
				m := newModel(t, srv, w)
				m.cfg.Retry.MaxRetries = tt.retries
				if tt.timeout > 0 {
					m.cfg.Retry.Timeout = tt.timeout
				}
				req := conversation()
				if streaming {
					req.OnText = func(string) {}
				}
				resp, err := m.Generate(context.Background(), req)
				if got := len(srv.Requests()); got != tt.wantCalls {
					t.Errorf("%d requests, want %d", got, tt.wantCalls)
				}
				if diff := cmp.Diff(tt.wantWaits, *w, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("waits (-want +got):\n%s", diff)
				}
				switch {
				case tt.wantErr == "" && err != nil:
					t.Fatalf("unexpected error: %v", err)
				case tt.wantErr == "" && (resp == nil || len(resp.Calls) != 2):
					t.Fatalf("response %+v, want two calls", resp)
				case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				if err != nil && strings.Contains(err.Error(), testKey) {
					t.Errorf("error leaks the API key: %v", err)
				}
			})
		}
	}
}

func asStream(replies []fakeserver.Reply) []fakeserver.Reply {
	out := make([]fakeserver.Reply, len(replies))
	for i, r := range replies {
		out[i] = r
		switch {
		case r.Body == okBody:
			out[i] = fakeserver.Reply{Body: okStream, Chunked: true, Header: sse}
		case strings.HasPrefix(r.Body, `{"id":"msg_1","content":[`):
			out[i] = fakeserver.Reply{Body: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\n\n", Header: sse}
		}
	}
	return out
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
	got, err := newModel(t, srv, nil).Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("an overload inside the stream should be retried: %v", err)
	}
	if got.Text != "Two calls." || len(srv.Requests()) != 2 {
		t.Errorf("text %q after %d requests", got.Text, len(srv.Requests()))
	}
}

func TestCancelStopsInFlight(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Stall: true})
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	m := newModel(t, srv, nil)
	go func() {
		_, err := m.Generate(ctx, conversation())
		done <- err
	}()
	for len(srv.Requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
