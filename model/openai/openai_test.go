package openai

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

const testKey = "sk-test-0123456789abcdef"

// waits collects the backoff the policy asked for instead of sleeping.
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
		Model: "gpt-test", APIKey: testKey, BaseURL: srv.URL + "/v1",
		Retry: retry.Policy{Sleep: w.sleep, Jitter: func(d time.Duration) time.Duration { return d }, Timeout: 5 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// conversation exercises every mapping: context, user text, an assistant
// turn with text and two calls, both results (one an error), tools.
func conversation() *model.Request {
	return &model.Request{
		Context: "You are the reporting assistant.",
		Messages: []model.Message{
			{Role: model.User, Text: "Prepare the report."},
			{Role: model.Assistant, Text: "Reading.", Calls: []model.ToolCall{
				{ID: "call_1", Name: "read_skill", Args: json.RawMessage(`{"id":"weekly-report"}`)},
				{ID: "call_2", Name: "fetch_sales", Args: json.RawMessage(`{"week":"2025-W01"}`)},
			}},
			{Role: model.Tool, CallID: "call_1", Name: "read_skill", Text: `{"loaded":true}`},
			{Role: model.Tool, CallID: "call_2", Name: "fetch_sales", Text: "exit status 1", IsError: true},
			{Role: model.User, Text: "Go on."},
		},
		Tools: []model.ToolDef{
			{Name: "read_skill", Description: "Load a skill.", Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)},
			{Name: "listTasks", Description: "List tasks."},
		},
	}
}

const okBody = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test",
 "choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Two calls.",
  "tool_calls":[{"id":"call_a","type":"function","function":{"name":"read_skill","arguments":"{\"id\":\"brand\"}"}},
                {"id":"call_b","type":"function","function":{"name":"listTasks","arguments":""}}]}}],
 "usage":{"prompt_tokens":120,"completion_tokens":15,"total_tokens":135}}`

func TestRequestBody(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Body: okBody})
	defer srv.Close()
	m := newModel(t, srv, nil)
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
	      "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}},
	    {"type": "function", "function": {"name": "listTasks", "description": "List tasks.",
	      "parameters": {"type": "object", "properties": {}}}}
	  ]
	}`), &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
}

func TestResponseMapping(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Body: okBody})
	defer srv.Close()
	got, err := newModel(t, srv, nil).Generate(context.Background(), conversation())
	if err != nil {
		t.Fatal(err)
	}
	want := &model.Response{
		Text: "Two calls.",
		Calls: []model.ToolCall{
			{ID: "call_a", Name: "read_skill", Args: json.RawMessage(`{"id":"brand"}`)},
			{ID: "call_b", Name: "listTasks", Args: json.RawMessage(`{}`)},
		},
		Usage: model.Usage{InputTokens: 120, OutputTokens: 15},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name      string
		replies   []fakeserver.Reply
		retries   int
		wantCalls int
		wantWaits waits
		wantErr   string // "" means success
		timeout   time.Duration
	}{
		{name: "429 with Retry-After then success", replies: []fakeserver.Reply{
			{Status: 429, Header: map[string]string{"Retry-After": "2"}, Body: `{"error":{"message":"Rate limit reached","type":"requests"}}`},
			{Body: okBody}}, wantCalls: 2, wantWaits: waits{2 * time.Second}},
		{name: "500 then success", replies: []fakeserver.Reply{
			{Status: 500, Body: `{"error":{"message":"internal"}}`}, {Body: okBody}},
			wantCalls: 2, wantWaits: waits{retry.DefaultBaseDelay}},
		{name: "400 is not retried", replies: []fakeserver.Reply{
			{Status: 400, Body: `{"error":{"message":"Invalid schema for function 'read_skill'","type":"invalid_request_error","param":"tools[0]"}}`}},
			wantCalls: 1, wantErr: "openai: HTTP 400 Bad Request: Invalid schema for function 'read_skill'"},
		{name: "401 names the problem", replies: []fakeserver.Reply{
			{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: ` + testKey + `"}}`}},
			wantCalls: 1, wantErr: "HTTP 401 Unauthorized: Incorrect API key provided: [REDACTED]"},
		{name: "malformed JSON", replies: []fakeserver.Reply{{Body: `{"id": "x", "choices": [`}}, wantCalls: 1, wantErr: "openai"},
		{name: "empty choice list", replies: []fakeserver.Reply{{Body: `{"id":"chatcmpl-9","choices":[],"usage":{"prompt_tokens":1}}`}},
			wantCalls: 1, wantErr: "openai: the server returned no choices (completion chatcmpl-9)"},
		{name: "stalled server hits the timeout", replies: []fakeserver.Reply{{Stall: true}}, retries: -1, timeout: 500 * time.Millisecond,
			wantCalls: 1, wantErr: "openai: no complete answer within the request timeout of 500ms"},
		{name: "retries spent", retries: 1, replies: []fakeserver.Reply{
			{Status: 503, Body: `{"error":{"message":"overloaded"}}`}, {Status: 503, Body: `{"error":{"message":"overloaded"}}`}},
			wantCalls: 2, wantWaits: waits{retry.DefaultBaseDelay}, wantErr: "openai: HTTP 503 Service Unavailable: overloaded (gave up after 2 attempts)"},
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

// asStream turns each successful JSON reply into the SSE stream a server
// would send for it; error replies stay as they are (APIs answer errors
// before the stream starts).
func asStream(replies []fakeserver.Reply) []fakeserver.Reply {
	out := make([]fakeserver.Reply, len(replies))
	for i, r := range replies {
		out[i] = r
		if r.Body == okBody {
			out[i] = fakeserver.Reply{Body: okStream, Chunked: true, Header: map[string]string{"Content-Type": "text/event-stream"}}
		}
		if strings.HasPrefix(r.Body, `{"id":"chatcmpl-9","choices":[]`) {
			out[i] = fakeserver.Reply{Body: "data: " + `{"id":"chatcmpl-9","object":"chat.completion.chunk","choices":[]}` + "\n\ndata: [DONE]\n\n",
				Chunked: true, Header: map[string]string{"Content-Type": "text/event-stream"}}
		}
		if strings.HasPrefix(r.Body, `{"id": "x"`) {
			out[i] = fakeserver.Reply{Body: "data: {\"id\": \"x\", \"choices\": [\n\ndata: [DONE]\n\n",
				Header: map[string]string{"Content-Type": "text/event-stream"}}
		}
	}
	return out
}

const okStream = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Two "}}]}

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
	srv := fakeserver.New(fakeserver.Reply{Body: okStream, Chunked: true, Header: map[string]string{"Content-Type": "text/event-stream"}})
	defer srv.Close()
	var deltas []string
	req := conversation()
	req.OnText = func(d string) { deltas = append(deltas, d) }
	got, err := newModel(t, srv, nil).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := &model.Response{
		Text: "Two calls.",
		Calls: []model.ToolCall{
			{ID: "call_a", Name: "read_skill", Args: json.RawMessage(`{"id":"brand"}`)},
			{ID: "call_b", Name: "listTasks", Args: json.RawMessage(`{}`)},
		},
		Usage: model.Usage{InputTokens: 120, OutputTokens: 15},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Two ", "calls."}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	var body map[string]any
	_ = json.Unmarshal(srv.Requests()[0].Body, &body)
	if body["stream"] != true || !cmp.Equal(body["stream_options"], map[string]any{"include_usage": true}) {
		t.Errorf("stream flags: stream=%v stream_options=%v", body["stream"], body["stream_options"])
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

func TestArgs(t *testing.T) {
	for in, want := range map[string]string{"": `{}`, `{"a":1}`: `{"a":1}`, `{"a":`: `"{\"a\":"`} {
		if got := string(Args(in)); got != want {
			t.Errorf("Args(%q) = %s, want %s", in, got, want)
		}
	}
}
