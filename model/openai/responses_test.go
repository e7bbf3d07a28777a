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

// rprov is the Responses model for the shared provider tests.
var rprov = providertest.Provider{
	New: func(url string, p retry.Policy) (model.Model, error) {
		return NewResponses(Config{Model: "gpt-test", APIKey: testKey, BaseURL: url + "/v1", Retry: p})
	},
	Request:  conversation,
	OKBody:   rOKBody,
	OKStream: rOKStream,
	AsStream: rAsStream,
}

// rOKBody answers the conversation whole, shaped like the Response
// examples of OpenAI's OpenAPI document (2.3.0): a reasoning item with
// its encrypted content, the text, two function calls.
const rOKBody = `{"id":"resp_1","object":"response","created_at":1741294021,"status":"completed","error":null,
 "incomplete_details":null,"model":"gpt-test","output":[
  {"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAAB-enc-1"},
  {"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Two calls.","annotations":[]}]},
  {"type":"function_call","id":"fc_a","call_id":"call_a","name":"read_skill","arguments":"{\"id\":\"brand\"}","status":"completed"},
  {"type":"function_call","id":"fc_b","call_id":"call_b","name":"listTasks","arguments":"","status":"completed"}],
 "usage":{"input_tokens":120,"input_tokens_details":{"cached_tokens":0,"cache_write_tokens":0},"output_tokens":15,"output_tokens_details":{"reasoning_tokens":8},"total_tokens":135}}`

// rOKStream is rOKBody streamed, its events as the document's streaming
// example and event schemas show them.
var rOKStream = sseOf(
	`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}}`,
	`{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}`,
	`{"type":"response.output_item.done","sequence_number":2,"output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAAB-enc-1"}}`,
	`{"type":"response.output_item.added","sequence_number":3,"output_index":1,"item":{"type":"message","id":"msg_1","status":"in_progress","role":"assistant","content":[]}}`,
	`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"Two ","logprobs":[]}`,
	`{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"calls.","logprobs":[]}`,
	`{"type":"response.output_text.done","sequence_number":6,"item_id":"msg_1","output_index":1,"content_index":0,"text":"Two calls.","logprobs":[]}`,
	`{"type":"response.output_item.done","sequence_number":7,"output_index":1,"item":{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Two calls.","annotations":[]}]}}`,
	`{"type":"response.output_item.added","sequence_number":8,"output_index":2,"item":{"type":"function_call","id":"fc_a","call_id":"call_a","name":"read_skill","arguments":"","status":"in_progress"}}`,
	`{"type":"response.function_call_arguments.delta","sequence_number":9,"item_id":"fc_a","output_index":2,"delta":"{\"id\":"}`,
	`{"type":"response.function_call_arguments.delta","sequence_number":10,"item_id":"fc_a","output_index":2,"delta":"\"brand\"}"}`,
	`{"type":"response.function_call_arguments.done","sequence_number":11,"item_id":"fc_a","output_index":2,"name":"read_skill","arguments":"{\"id\":\"brand\"}"}`,
	`{"type":"response.output_item.done","sequence_number":12,"output_index":2,"item":{"type":"function_call","id":"fc_a","call_id":"call_a","name":"read_skill","arguments":"{\"id\":\"brand\"}","status":"completed"}}`,
	`{"type":"response.output_item.done","sequence_number":13,"output_index":3,"item":{"type":"function_call","id":"fc_b","call_id":"call_b","name":"listTasks","arguments":"","status":"completed"}}`,
	`{"type":"response.completed","sequence_number":14,"response":`+strings.ReplaceAll(rOKBody, "\n", "")+`}`,
)

// sseOf writes events as a server sends them: each with its event: line.
func sseOf(data ...string) string {
	var b strings.Builder
	for _, d := range data {
		var e struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal([]byte(d), &e)
		b.WriteString("event: " + e.Type + "\ndata: " + d + "\n\n")
	}
	return b.String()
}

// rAsStream is what a server streams for a reply of TestResponsesFailures.
func rAsStream(r fakeserver.Reply) fakeserver.Reply {
	switch {
	case r.Body == rOKBody:
		return fakeserver.Reply{Body: rOKStream, Chunked: true, Header: sse}
	case strings.HasPrefix(r.Body, `{"id":"resp_9"`):
		return fakeserver.Reply{Body: sseOf(`{"type":"response.completed","response":` + r.Body + `}`), Header: sse}
	case strings.HasPrefix(r.Body, `{"id": "x"`):
		return fakeserver.Reply{Body: "event: response.completed\ndata: {\"id\": \"x\", \"output\": [\n\n", Header: sse}
	}
	return r
}

// rState is the state rOKBody's answer keeps: its items in order, the
// reasoning item whole, the others by id.
const rState = `[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAAB-enc-1"},` +
	`{"type":"message","id":"msg_1"},{"type":"function_call","id":"fc_a","call_id":"call_a"},{"type":"function_call","id":"fc_b","call_id":"call_b"}]`

// rWant is rOKBody's answer, and rOKStream's.
func rWant() *model.Response {
	r := wantResponse()
	r.Usage.ReasoningTokens = 8
	r.State = &model.State{Model: "openai-responses/gpt-test", Data: json.RawMessage(rState)}
	// A complete response says no finish reason: the Responses API gives
	// one only for an incomplete answer.
	r.ID, r.FinishReason = "resp_1", ""
	return r
}

func TestResponsesRequestBody(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Body: rOKBody})
	defer srv.Close()
	if _, err := rprov.Model(t, srv).Generate(context.Background(), conversation()); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Method != "POST" || r.Path != "/v1/responses" || r.Header.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("request %s %s (Authorization %q), want POST /v1/responses with the key", r.Method, r.Path, r.Header.Get("Authorization"))
	}
	var got, want any
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(`{
	  "model": "gpt-test",
	  "instructions": "You are the reporting assistant.",
	  "store": false,
	  "include": ["reasoning.encrypted_content"],
	  "input": [
	    {"type": "message", "role": "user", "content": "Prepare the report."},
	    {"type": "message", "role": "assistant", "content": "Reading."},
	    {"type": "function_call", "call_id": "call_1", "name": "read_skill", "arguments": "{\"id\":\"weekly-report\"}"},
	    {"type": "function_call", "call_id": "call_2", "name": "fetch_sales", "arguments": "{\"week\":\"2025-W01\"}"},
	    {"type": "function_call_output", "call_id": "call_1", "output": "{\"loaded\":true}"},
	    {"type": "function_call_output", "call_id": "call_2", "output": "exit status 1"},
	    {"type": "message", "role": "user", "content": "Go on."}
	  ],
	  "tools": [
	    {"type": "function", "name": "read_skill", "description": "Load a skill.", "strict": false,
	      "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": false}},
	    {"type": "function", "name": "listTasks", "description": "List tasks.", "strict": false,
	      "parameters": {"type": "object", "properties": {}}}
	  ]
	}`), &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
}

func TestResponsesMapping(t *testing.T) { rprov.Whole(t, rWant()) }

func TestResponsesStreaming(t *testing.T) {
	if body := rprov.Streaming(t, rWant()); body["stream"] != true {
		t.Errorf("stream = %v", body["stream"])
	}
}

func TestResponsesCancelStopsInFlight(t *testing.T) { rprov.CancelStopsInFlight(t) }

func TestResponsesFailures(t *testing.T) {
	rprov.Failures(t, testKey, []providertest.Failure{
		{Name: "429 with Retry-After then success", Replies: []fakeserver.Reply{
			{Status: 429, Header: map[string]string{"Retry-After": "2"}, Body: `{"error":{"message":"Rate limit reached","type":"requests"}}`},
			{Body: rOKBody}}, WantCalls: 2, WantWaits: providertest.Waits{2 * time.Second}},
		{Name: "500 then success", Replies: []fakeserver.Reply{
			{Status: 500, Body: `{"error":{"message":"internal"}}`}, {Body: rOKBody}},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}},
		{Name: "400 is not retried", Replies: []fakeserver.Reply{
			{Status: 400, Body: `{"error":{"message":"Invalid schema for function 'read_skill'","type":"invalid_request_error","param":"tools[0]"}}`}},
			WantCalls: 1, WantErr: "openai-responses: HTTP 400 Bad Request: Invalid schema for function 'read_skill'"},
		{Name: "401 names the problem", Replies: []fakeserver.Reply{
			{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: ` + testKey + `"}}`}},
			WantCalls: 1, WantErr: "HTTP 401 Unauthorized: Incorrect API key provided: [REDACTED]"},
		{Name: "malformed JSON", Replies: []fakeserver.Reply{{Body: `{"id": "x", "output": [`}}, WantCalls: 1, WantErr: "openai-responses"},
		{Name: "no output", Replies: []fakeserver.Reply{{Body: `{"id":"resp_9","object":"response","status":"completed","output":[]}`}},
			WantCalls: 1, WantErr: "openai-responses: the server returned no text and no calls (response resp_9)"},
		{Name: "stalled server hits the timeout", Replies: []fakeserver.Reply{{Stall: true}}, Retries: -1, Timeout: 500 * time.Millisecond,
			WantCalls: 1, WantErr: "openai-responses: no complete answer within the request timeout of 500ms"},
		{Name: "retries spent", Retries: 1, Replies: []fakeserver.Reply{
			{Status: 503, Body: `{"error":{"message":"overloaded"}}`}, {Status: 503, Body: `{"error":{"message":"overloaded"}}`}},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}, WantErr: "openai-responses: HTTP 503 Service Unavailable: overloaded (gave up after 2 attempts)"},
	})
}

// A response the API marks failed, or a stream's error event, is the
// status its code stands for: retried for a server error or a rate limit,
// not for anything else; an incomplete response with nothing in it says
// why and is not retried. The key is masked in what the server echoed.
func TestResponsesReportedFailures(t *testing.T) {
	failed := func(code, msg string) string {
		return `{"id":"resp_f","object":"response","status":"failed","error":{"code":"` + code + `","message":"` + msg + `"},"output":[]}`
	}
	event := func(data string) fakeserver.Reply { return fakeserver.Reply{Body: sseOf(data), Header: sse} }
	ok := fakeserver.Reply{Body: rOKStream, Header: sse}
	rprov.StreamFailures(t, testKey, []providertest.Failure{
		{Name: "failed with a server error", Replies: []fakeserver.Reply{event(`{"type":"response.failed","response":` + failed("server_error", "The model failed") + `}`), ok},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}},
		{Name: "failed with a bad image", Replies: []fakeserver.Reply{event(`{"type":"response.failed","response":` + failed("invalid_image", "The image is not valid") + `}`)},
			WantCalls: 1, WantErr: "openai-responses: HTTP 400 Bad Request: the response failed: The image is not valid (invalid_image)"},
		{Name: "error event, rate limit", Replies: []fakeserver.Reply{event(`{"type":"error","code":"rate_limit_exceeded","message":"Slow down","param":null,"sequence_number":3}`), ok},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}},
		{Name: "error event echoing the key", Replies: []fakeserver.Reply{event(`{"type":"error","code":"invalid_prompt","message":"bad key ` + testKey + `","param":null,"sequence_number":3}`)},
			WantCalls: 1, WantErr: "error inside the stream: bad key [REDACTED] (invalid_prompt)"},
		{Name: "error event nested, no code", Replies: []fakeserver.Reply{event(`{"type":"error","error":{"type":"server_error","message":"Something went wrong"}}`), ok},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}},
		{Name: "incomplete with no answer", Replies: []fakeserver.Reply{event(`{"type":"response.incomplete","response":{"id":"resp_i","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},` +
			`"output":[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"e"}]}}`)},
			WantCalls: 1, WantErr: "openai-responses: the response is incomplete (max_output_tokens) and holds no answer (response resp_i); the model spent its output tokens before answering: raise max tokens"},
	})
	// Whole, a failed response is the same error.
	srv := fakeserver.New(fakeserver.Reply{Body: failed("invalid_prompt", "Refused")})
	defer srv.Close()
	_, err := rprov.Model(t, srv).Generate(context.Background(), conversation())
	if err == nil || !strings.Contains(err.Error(), "HTTP 400 Bad Request: the response failed: Refused (invalid_prompt)") {
		t.Errorf("whole failed response: err = %v", err)
	}
}

// An incomplete response that holds text is the answer, as a Chat
// Completions answer cut at its length is.
func TestResponsesIncompleteWithText(t *testing.T) {
	body := `{"id":"resp_i","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[` +
		`{"type":"message","id":"msg_1","role":"assistant","status":"incomplete","content":[{"type":"output_text","text":"Half an","annotations":[]}]}]}`
	resp, _ := rprov.Call(t, fakeserver.Reply{Body: body}, conversation())
	if resp.Text != "Half an" {
		t.Errorf("text = %q", resp.Text)
	}
}

func TestResponsesUnstreamed(t *testing.T) {
	rprov.Unstreamed(t, ResponsesName, testKey, rWant())
}

// A stream that stops before response.completed is not an answer: it is
// retried, and the consumer hears a reset before the retry's text.
func TestResponsesTruncatedStream(t *testing.T) {
	cut := strings.Index(rOKStream, "event: response.completed")
	firstText := strings.Index(rOKStream, "event: response.output_text.delta")
	oneDelta := firstText + strings.Index(rOKStream[firstText+1:], "event: ") + 1
	both := []string{"Two ", "calls.", "<reset>", "Two ", "calls."}
	rprov.TruncatedStream(t, []providertest.Cut{
		{Name: "chunked body that ends cleanly", First: fakeserver.Reply{Body: rOKStream[:cut], Chunked: true, Header: sse}, Deltas: both},
		{Name: "connection closed mid-event", First: fakeserver.Reply{Body: rOKStream[:cut+60], Abort: true, Header: sse}, Deltas: both},
		{Name: "one delta, then a clean end", First: fakeserver.Reply{Body: rOKStream[:oneDelta], Header: sse},
			Deltas: []string{"Two ", "<reset>", "Two ", "calls."}},
	}, "openai-responses: the answer stream ended early, without response.completed")
}

// Text and argument deltas count toward the answer cap as they come.
func TestResponsesAnswerCap(t *testing.T) {
	big := strings.Repeat("x", model.MaxResponseBytes/2)
	msg := func(text string) string {
		return `{"type":"message","id":"m","role":"assistant","status":"completed","content":[{"type":"output_text","text":"` + text + `","annotations":[]}]}`
	}
	whole := `{"id":"r","status":"completed","output":[` + msg(big+big+"y") + `]}`
	delta := func(d string) string {
		return `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"` + d + `"}`
	}
	rprov.AnswerCap(t, whole, sseOf(delta(big), delta(big), delta("y")))
	args := func(d string) string {
		return `{"type":"response.function_call_arguments.delta","output_index":0,"delta":"` + d + `"}`
	}
	call := `{"type":"function_call","id":"fc","call_id":"c","name":"echo","arguments":"{\"text\":\"` + big + big + `y\"}"}`
	rprov.AnswerCap(t, `{"id":"r","status":"completed","output":[`+call+`]}`, sseOf(args(`{\"text\":\"`+big), args(big), args(`y\"}`)))
}

// Usage reads cached, cache-write and reasoning tokens; reasoning tokens
// are part of the output tokens, as the API counts and bills them.
func TestResponsesUsage(t *testing.T) {
	body := strings.Replace(rOKBody, `"input_tokens_details":{"cached_tokens":0,"cache_write_tokens":0}`,
		`"input_tokens_details":{"cached_tokens":768,"cache_write_tokens":12}`, 1)
	for _, streaming := range []bool{false, true} {
		req, reply := conversation(), fakeserver.Reply{Body: body}
		if streaming {
			req.OnText = func(string) {}
			reply = fakeserver.Reply{Body: sseOf(`{"type":"response.completed","response":` + strings.ReplaceAll(body, "\n", "") + `}`), Header: sse}
		}
		resp, _ := rprov.Call(t, reply, req)
		want := model.Usage{InputTokens: 120, CachedInputTokens: 768, CacheWriteTokens: 12, OutputTokens: 15, ReasoningTokens: 8}
		if resp.Usage != want {
			t.Errorf("streaming %v: usage %+v, want %+v", streaming, resp.Usage, want)
		}
	}
}

// A server whose terminal event carries no output (some compatible
// servers) is read from the items the stream marked done.
func TestResponsesCompletedWithoutOutput(t *testing.T) {
	i := strings.Index(rOKStream, "event: response.completed")
	stream := rOKStream[:i] + sseOf(`{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[],`+
		`"usage":{"input_tokens":120,"output_tokens":15,"output_tokens_details":{"reasoning_tokens":8}}}}`)
	req := conversation()
	req.OnText = func(string) {}
	got, _ := rprov.Call(t, fakeserver.Reply{Body: stream, Header: sse}, req)
	want := rWant()
	want.Served = "" // the terminal event here names no model
	if diff := cmp.Diff(want, got, providertest.IgnoreServer); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Two message items of one answer are one text, apart by a blank line,
// whole and streamed alike.
func TestResponsesTwoMessages(t *testing.T) {
	msg := func(id, text string) string {
		return `{"type":"message","id":"` + id + `","role":"assistant","status":"completed","content":[{"type":"output_text","text":"` + text + `","annotations":[]}]}`
	}
	body := `{"id":"r","status":"completed","output":[` + msg("m1", "First.") + `,` + msg("m2", "Second.") + `]}`
	resp, _ := rprov.Call(t, fakeserver.Reply{Body: body}, conversation())
	var deltas []string
	req := conversation()
	req.OnText = func(d string) { deltas = append(deltas, d) }
	stream := sseOf(`{"type":"response.output_text.delta","output_index":0,"delta":"First."}`,
		`{"type":"response.output_text.delta","output_index":1,"delta":"Second."}`,
		`{"type":"response.completed","response":`+body+`}`)
	streamed, _ := rprov.Call(t, fakeserver.Reply{Body: stream, Header: sse}, req)
	if resp.Text != "First.\n\nSecond." || streamed.Text != resp.Text || strings.Join(deltas, "") != resp.Text {
		t.Errorf("whole %q, streamed %q, deltas %q", resp.Text, streamed.Text, deltas)
	}
}
