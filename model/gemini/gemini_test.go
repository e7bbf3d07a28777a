package gemini

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

const testKey = "AIzaSy-test-0123456789abcdef"

// prov is this package's model for the shared provider tests.
var prov = providertest.Provider{
	New: func(url string, p retry.Policy) (model.Model, error) {
		return New(Config{Model: "gemini-test", APIKey: testKey, BaseURL: url, Retry: p})
	},
	Request:  conversation,
	OKBody:   okBody,
	OKStream: okStream,
	AsStream: asStream,
}

// conversation is the shared one; the assistant message keeps the thought
// signatures Gemini sent with it: one on the first call, one on the text.
func conversation() *model.Request {
	req := providertest.Conversation("fc_")
	req.Messages[1].State = &model.State{Model: "gemini/gemini-test", Data: json.RawMessage(`{"calls":{"fc_1":"c2lnLTE="},"text":"dGV4dA=="}`)}
	return req
}

// okBody is shaped like the reference's generateContent response: one
// candidate whose parts are text and two function calls (the first with
// an id and a thought signature, the second with neither and no args),
// and usageMetadata with cached and thought tokens.
const okBody = `{"candidates":[{"content":{"role":"model","parts":[
   {"text":"Two calls."},
   {"functionCall":{"id":"fc_a","name":"read_skill","args":{"id":"brand"}},"thoughtSignature":"c2lnLWE="},
   {"functionCall":{"name":"listTasks"}}]},
  "finishReason":"STOP","index":0}],
 "usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":10,"cachedContentTokenCount":20,"thoughtsTokenCount":5,"totalTokenCount":135},
 "modelVersion":"gemini-test","responseId":"resp-1"}`

// okStream is okBody streamed: a thought (not shown), the text in two
// events, then the calls with the finish reason and the final usage.
const okStream = `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Weighing it.","thought":true},{"text":"Two "}]},"index":0}],"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":1},"modelVersion":"gemini-test","responseId":"resp-1"}

data: {"candidates":[{"content":{"role":"model","parts":[{"text":"calls."}]},"index":0}],"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":3},"modelVersion":"gemini-test","responseId":"resp-1"}

data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"fc_a","name":"read_skill","args":{"id":"brand"}},"thoughtSignature":"c2lnLWE="},{"functionCall":{"name":"listTasks"}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":10,"cachedContentTokenCount":20,"thoughtsTokenCount":5,"totalTokenCount":135},"modelVersion":"gemini-test","responseId":"resp-1"}

`

var sse = providertest.SSE

// wantResponse is okBody's answer, and okStream's.
func wantResponse() *model.Response {
	return &model.Response{
		Text: "Two calls.",
		Calls: []model.ToolCall{
			{ID: "fc_a", Name: "read_skill", Args: json.RawMessage(`{"id":"brand"}`)},
			{Name: "listTasks", Args: json.RawMessage(`{}`)},
		},
		Usage: model.Usage{InputTokens: 120, OutputTokens: 15, CachedInputTokens: 20, ReasoningTokens: 5},
		State: &model.State{Model: "gemini/gemini-test", Data: json.RawMessage(`{"calls":{"fc_a":"c2lnLWE="}}`)},
		ID:    "resp-1", Served: "gemini-test", FinishReason: "STOP",
	}
}

func TestRequestBody(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Body: okBody})
	defer srv.Close()
	if _, err := prov.Model(t, srv).Generate(context.Background(), conversation()); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Method != "POST" || r.Path != "/v1beta/models/gemini-test:generateContent" || r.Query != "" {
		t.Errorf("request %s %s?%s, want POST /v1beta/models/gemini-test:generateContent", r.Method, r.Path, r.Query)
	}
	if got := r.Header.Get("X-Goog-Api-Key"); got != testKey {
		t.Errorf("x-goog-api-key = %q", got)
	}
	var got any
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	var want any
	if err := json.Unmarshal([]byte(`{
	  "systemInstruction": {"parts": [{"text": "You are the reporting assistant."}]},
	  "contents": [
	    {"role": "user", "parts": [{"text": "Prepare the report."}]},
	    {"role": "model", "parts": [
	      {"text": "Reading.", "thoughtSignature": "dGV4dA=="},
	      {"functionCall": {"id": "fc_1", "name": "read_skill", "args": {"id": "weekly-report"}}, "thoughtSignature": "c2lnLTE="},
	      {"functionCall": {"id": "fc_2", "name": "fetch_sales", "args": {"week": "2025-W01"}}}]},
	    {"role": "user", "parts": [
	      {"functionResponse": {"id": "fc_1", "name": "read_skill", "response": {"output": "{\"loaded\":true}"}}},
	      {"functionResponse": {"id": "fc_2", "name": "fetch_sales", "response": {"error": "exit status 1"}}},
	      {"text": "Go on."}]}
	  ],
	  "tools": [{"functionDeclarations": [
	    {"name": "read_skill", "description": "Load a skill.",
	     "parametersJsonSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": false}},
	    {"name": "listTasks", "description": "List tasks.", "parametersJsonSchema": {"type": "object", "properties": {}}}
	  ]}]
	}`), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
}

func TestResponseMapping(t *testing.T) { prov.Whole(t, wantResponse()) }

func TestStreaming(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Body: okStream, Chunked: true, Header: sse})
	defer srv.Close()
	req := conversation()
	req.OnText = func(string) {}
	if _, err := prov.Model(t, srv).Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if r := srv.Requests()[0]; r.Path != "/v1beta/models/gemini-test:streamGenerateContent" || r.Query != "alt=sse" {
		t.Errorf("streamed to %s?%s, want /v1beta/models/gemini-test:streamGenerateContent?alt=sse", r.Path, r.Query)
	}
	prov.Streaming(t, wantResponse())
}

// googleError is an error body as Google's APIs send it.
func googleError(code int, status, msg string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": msg, "status": status}})
	return string(b)
}

// quotaError is a 429 as Gemini sends it: no Retry-After header, the
// wait in a RetryInfo detail.
const quotaError = `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED",
 "details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests"}]},
  {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}`

// malformedCall is a candidate that ended on a function call the model
// got wrong: no content, finish reason MALFORMED_FUNCTION_CALL.
const malformedCall = `{"candidates":[{"finishReason":"MALFORMED_FUNCTION_CALL","index":0}],"usageMetadata":{"promptTokenCount":120}}`

func TestFailures(t *testing.T) {
	prov.Failures(t, testKey, []providertest.Failure{
		{Name: "429 with RetryInfo then success", Replies: []fakeserver.Reply{{Status: 429, Body: quotaError}, {Body: okBody}},
			WantCalls: 2, WantWaits: providertest.Waits{7 * time.Second}},
		{Name: "429 with Retry-After then success", Replies: []fakeserver.Reply{
			{Status: 429, Header: map[string]string{"Retry-After": "2"}, Body: googleError(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted")},
			{Body: okBody}}, WantCalls: 2, WantWaits: providertest.Waits{2 * time.Second}},
		{Name: "503 overloaded then success", Replies: []fakeserver.Reply{
			{Status: 503, Body: googleError(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")}, {Body: okBody}},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}},
		{Name: "500 then success", Replies: []fakeserver.Reply{
			{Status: 500, Body: googleError(500, "INTERNAL", "An internal error has occurred.")}, {Body: okBody}},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}},
		{Name: "malformed function call then success", Replies: []fakeserver.Reply{{Body: malformedCall}, {Body: okBody}},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}},
		{Name: "400 is not retried", Replies: []fakeserver.Reply{
			{Status: 400, Body: googleError(400, "INVALID_ARGUMENT", "Function call is missing a thought_signature in functionCall parts.")}},
			WantCalls: 1, WantErr: "gemini: HTTP 400 Bad Request: Function call is missing a thought_signature in functionCall parts."},
		{Name: "a bad key names the problem", Replies: []fakeserver.Reply{
			{Status: 400, Body: googleError(400, "INVALID_ARGUMENT", "API key not valid: "+testKey)}},
			WantCalls: 1, WantErr: "gemini: HTTP 400 Bad Request: API key not valid: [REDACTED]"},
		{Name: "blocked prompt", Replies: []fakeserver.Reply{{Body: `{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":9}}`}},
			WantCalls: 1, WantErr: "gemini: the prompt was blocked (SAFETY)"},
		{Name: "withheld answer", Replies: []fakeserver.Reply{{Body: `{"candidates":[{"finishReason":"RECITATION","index":0}]}`}},
			WantCalls: 1, WantErr: "gemini: the answer was withheld (finish reason RECITATION)"},
		{Name: "malformed JSON", Replies: []fakeserver.Reply{{Body: `{"candidates": [`}}, WantCalls: 1, WantErr: "gemini"},
		{Name: "stalled server hits the timeout", Replies: []fakeserver.Reply{{Stall: true}}, Retries: -1, Timeout: 500 * time.Millisecond,
			WantCalls: 1, WantErr: "gemini: no complete answer within the request timeout of 500ms"},
		{Name: "retries spent", Retries: 1, Replies: []fakeserver.Reply{
			{Status: 503, Body: googleError(503, "UNAVAILABLE", "overloaded")}, {Status: 503, Body: googleError(503, "UNAVAILABLE", "overloaded")}},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}, WantErr: "gemini: HTTP 503 Service Unavailable: overloaded (gave up after 2 attempts)"},
	})
}

// asStream is what a server streams for a reply of TestFailures: error
// statuses come before a stream starts, so they stay as they are; an
// answer is one event.
func asStream(r fakeserver.Reply) fakeserver.Reply {
	switch {
	case r.Status != 0 || r.Stall:
		return r
	case r.Body == okBody:
		return fakeserver.Reply{Body: okStream, Chunked: true, Header: sse}
	case strings.HasPrefix(r.Body, `{"candidates": [`):
		return fakeserver.Reply{Body: "data: {\"candidates\": [\n\n", Header: sse}
	}
	return fakeserver.Reply{Body: "data: " + strings.ReplaceAll(r.Body, "\n", "") + "\n\n", Chunked: true, Header: sse}
}

// An overload reported inside a stream, after its 200, is retried as its
// code says.
func TestStreamErrorEvent(t *testing.T) {
	overloaded := `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Tw"}]},"index":0}]}` + "\n\n" +
		`data: {"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}` + "\n\n"
	srv := fakeserver.New(
		fakeserver.Reply{Body: overloaded, Chunked: true, Header: sse},
		fakeserver.Reply{Body: okStream, Chunked: true, Header: sse})
	defer srv.Close()
	var got []string
	req := conversation()
	req.OnText = func(d string) { got = append(got, d) }
	req.OnReset = func() { got = append(got, "<reset>") }
	resp, err := prov.Model(t, srv).Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("an overload inside the stream should be retried: %v", err)
	}
	if resp.Text != "Two calls." || len(srv.Requests()) != 2 {
		t.Errorf("text %q after %d requests", resp.Text, len(srv.Requests()))
	}
	if diff := cmp.Diff([]string{"Tw", "<reset>", "Two ", "calls."}, got); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
}

func TestCancelStopsInFlight(t *testing.T) { prov.CancelStopsInFlight(t) }

func TestCapabilities(t *testing.T) {
	for name, want := range map[string]model.Capabilities{
		"gemini-2.5-flash": {Tools: true, Images: true, Audio: true, TypedOutput: true, Caching: true},
		"gemma-3-27b-it":   {Images: true},
	} {
		m, err := New(Config{Model: name, APIKey: testKey})
		if err != nil {
			t.Fatal(err)
		}
		if got := model.CapabilitiesOf(m); got != want {
			t.Errorf("%s: capabilities %+v, want %+v", name, got, want)
		}
	}
}

// A Gemma model is sent only what it takes: the context block as the
// first user text, no tools, no output schema, images but not audio.
func TestGemma(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Body: okBody})
	defer srv.Close()
	m, err := New(Config{Model: "gemma-3-27b-it", APIKey: testKey, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	req := conversation()
	req.Output = &model.Output{Name: "o", Schema: json.RawMessage(`{"type":"object"}`)}
	req.Messages[4].Media = []model.Media{{MIME: "audio/wav", Data: []byte("RIFF")}, {MIME: "image/png", Data: []byte("PNG")}}
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if _, ok := body["systemInstruction"]; ok {
		t.Error("a systemInstruction was sent to Gemma")
	}
	if _, ok := body["generationConfig"]; ok {
		t.Error("an output schema was sent to Gemma")
	}
	if _, ok := body["tools"]; ok {
		t.Error("tools were sent to Gemma")
	}
	if raw := string(srv.Requests()[0].Body); strings.Contains(raw, "audio/wav") || !strings.Contains(raw, "image/png") {
		t.Errorf("media sent to Gemma: %s", raw)
	}
	first, _ := json.Marshal(body["contents"].([]any)[0])
	if want := `{"parts":[{"text":"You are the reporting assistant."},{"text":"Prepare the report."}],"role":"user"}`; string(first) != want {
		t.Errorf("first content %s, want %s", first, want)
	}
}

// A model name that says its collection (a tuned model) is the resource
// as written; a plain name is one of models/.
func TestModelPath(t *testing.T) {
	for name, want := range map[string]string{
		"gemini-2.5-flash":  "/v1beta/models/gemini-2.5-flash:generateContent",
		"tunedModels/mine1": "/v1beta/tunedModels/mine1:generateContent",
	} {
		srv := fakeserver.New(fakeserver.Reply{Body: okBody})
		m, err := New(Config{Model: name, APIKey: testKey, BaseURL: srv.URL + "/"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Generate(context.Background(), conversation()); err != nil {
			t.Fatal(err)
		}
		if got := srv.Requests()[0].Path; got != want {
			t.Errorf("%s: path %s, want %s", name, got, want)
		}
		srv.Close()
	}
}
