package openai

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
)

// inputOf returns the input items of a request body.
func inputOf(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var b struct {
		Input []map[string]any `json:"input"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	return b.Input
}

// A function-call round trip: step 1 answers with a reasoning item and
// calls; step 2's request, built from the transcript as the engine builds
// it (the answer's state on its assistant message), sends the reasoning
// item back before the calls it came with, every item with the id the API
// gave it, in the API's order. Store is false throughout.
func TestResponsesReasoningRoundTrip(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Body: rOKBody}, fakeserver.Reply{Body: rOKBody})
	defer srv.Close()
	m := rprov.Model(t, srv)
	req := &model.Request{Context: "ctx", Messages: []model.Message{{Role: model.User, Text: "Go."}}}
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages,
		model.Message{Role: model.Assistant, Text: resp.Text, Calls: resp.Calls, State: resp.State},
		model.Message{Role: model.Tool, CallID: "call_a", Name: "read_skill", Text: "ok"},
		model.Message{Role: model.Tool, CallID: "call_b", Name: "listTasks", Text: "[]"})
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var want []map[string]any
	_ = json.Unmarshal([]byte(`[
	  {"type": "message", "role": "user", "content": "Go."},
	  {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAB-enc-1"},
	  {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
	   "content": [{"type": "output_text", "text": "Two calls.", "annotations": [], "logprobs": []}]},
	  {"type": "function_call", "id": "fc_a", "call_id": "call_a", "name": "read_skill", "arguments": "{\"id\":\"brand\"}"},
	  {"type": "function_call", "id": "fc_b", "call_id": "call_b", "name": "listTasks", "arguments": "{}"},
	  {"type": "function_call_output", "call_id": "call_a", "output": "ok"},
	  {"type": "function_call_output", "call_id": "call_b", "output": "[]"}
	]`), &want)
	second := srv.Requests()[1].Body
	if diff := cmp.Diff(want, inputOf(t, second)); diff != "" {
		t.Errorf("step 2 input (-want +got):\n%s", diff)
	}
	var flags struct {
		Store    *bool   `json:"store"`
		Previous *string `json:"previous_response_id"`
	}
	_ = json.Unmarshal(second, &flags)
	if flags.Store == nil || *flags.Store || flags.Previous != nil {
		t.Errorf("store %v, previous_response_id %v: want store false and no previous response", flags.Store, flags.Previous)
	}
}

// State made by another model (a fallback chain's previous model, or the
// same name through the other API) is not sent: the message and calls go
// as the transcript has them, without ids or reasoning.
func TestResponsesStateOfAnotherModelIsNotSent(t *testing.T) {
	for _, other := range []string{"openai-responses/gpt-other", "openai/gpt-test", "gemini/gpt-test"} {
		req := &model.Request{Messages: []model.Message{
			{Role: model.User, Text: "Go."},
			{Role: model.Assistant, Text: "Done.", State: &model.State{Model: other, Data: json.RawMessage(rState)}},
			{Role: model.User, Text: "Again."},
		}}
		_, sent := rprov.Call(t, fakeserver.Reply{Body: rOKBody}, req)
		got := inputOf(t, sent)
		if len(got) != 3 || got[1]["type"] != "message" || got[1]["id"] != nil || got[1]["content"] != "Done." {
			t.Errorf("state of %s: input %v", other, got)
		}
	}
}

// A reasoning item without encrypted content (a server that sends none)
// is not kept: under store false it could not be sent back. An answer
// without reasoning keeps no state at all.
func TestResponsesStateOnlyWithEncryptedReasoning(t *testing.T) {
	body := `{"id":"r","status":"completed","output":[{"type":"reasoning","id":"rs_x","summary":[]},` +
		`{"type":"message","id":"m","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hi","annotations":[]}]}]}`
	resp, _ := rprov.Call(t, fakeserver.Reply{Body: body}, conversation())
	if resp.Text != "Hi" || resp.State != nil {
		t.Errorf("response %+v, state %+v: want the text and no state", resp, resp.State)
	}
}

// An output schema goes out as text.format json_schema, under the same
// rules as Chat Completions' response_format: strict when it fits strict
// mode, guiding otherwise, not at all when its root is not an object.
func TestResponsesTextFormat(t *testing.T) {
	closed := `{"type":"object","additionalProperties":false,"required":["total"],"properties":{"total":{"type":"integer"}}}`
	open := `{"type":"object","required":["total"],"properties":{"total":{"type":"integer"},"note":{"type":"string"}}}`
	for _, tc := range []struct {
		name   string
		out    *model.Output
		strict any // nil: no text.format
	}{
		{"closed schema is strict", &model.Output{Name: "weekly report", Schema: json.RawMessage(closed)}, true},
		{"open schema guides", &model.Output{Name: "collector", Schema: json.RawMessage(open)}, false},
		{"array root is not sent", &model.Output{Name: "lister", Schema: json.RawMessage(`{"type":"array"}`)}, nil},
		{"no output", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := conversation()
			req.Output = tc.out
			_, sent := rprov.Call(t, fakeserver.Reply{Body: rOKBody}, req)
			var body struct {
				Text *struct {
					Format struct {
						Type   string         `json:"type"`
						Name   string         `json:"name"`
						Strict bool           `json:"strict"`
						Schema map[string]any `json:"schema"`
					} `json:"format"`
				} `json:"text"`
			}
			if err := json.Unmarshal(sent, &body); err != nil {
				t.Fatal(err)
			}
			if tc.strict == nil {
				if body.Text != nil {
					t.Errorf("text.format sent: %+v", body.Text)
				}
				return
			}
			f := body.Text.Format
			if f.Type != "json_schema" || f.Name != schemaName(tc.out.Name) || f.Strict != tc.strict {
				t.Fatalf("text.format = %+v", f)
			}
			var want map[string]any
			_ = json.Unmarshal(tc.out.Schema, &want)
			if !reflect.DeepEqual(f.Schema, want) {
				t.Errorf("schema sent %v, want %v", f.Schema, want)
			}
		})
	}
}

// Images on a user message and on a tool result go as input_image parts
// beside the text, as data URLs; audio is not sent, and the text says so.
// A model without vision gets the text and a note.
func TestResponsesImages(t *testing.T) {
	media := []model.Media{{MIME: "image/png", Data: []byte("PNG")}, {MIME: "audio/wav", Data: []byte("RIFF")}}
	for _, tc := range []struct {
		model string
		want  any
	}{
		{"gpt-5.4", []any{
			map[string]any{"type": "input_text", "text": "Look.\n[1 audio clip not shown: this model does not take them]"},
			map[string]any{"type": "input_image", "image_url": "data:image/png;base64,UE5H", "detail": "auto"},
		}},
		{"o3-mini", "Look.\n[1 image and 1 audio clip not shown: this model does not take them]"},
	} {
		srv := fakeserver.New(fakeserver.Reply{Body: rOKBody})
		m, err := NewResponses(Config{Model: tc.model, APIKey: testKey, BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		req := &model.Request{Messages: []model.Message{
			{Role: model.User, Text: "Look.", Media: media},
			{Role: model.Assistant, Calls: []model.ToolCall{{ID: "c1", Name: "shot"}}},
			{Role: model.Tool, CallID: "c1", Name: "shot", Text: "Look.", Media: media},
		}}
		if _, err := m.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		in := inputOf(t, srv.Requests()[0].Body)
		srv.Close()
		if diff := cmp.Diff(tc.want, in[0]["content"]); diff != "" {
			t.Errorf("%s: user content (-want +got):\n%s", tc.model, diff)
		}
		if diff := cmp.Diff(tc.want, in[2]["output"]); diff != "" {
			t.Errorf("%s: tool output (-want +got):\n%s", tc.model, diff)
		}
		if got := m.Capabilities().Images; got != (tc.model == "gpt-5.4") {
			t.Errorf("%s: Capabilities().Images = %v", tc.model, got)
		}
	}
}

// Reasoning items are asked for from models that reason, not from the
// families before reasoning, which refuse the include.
func TestResponsesIncludeOnlyForReasoningModels(t *testing.T) {
	for name, want := range map[string]bool{"gpt-5.4": true, "o4-mini": true, "gpt-oss-120b": true, "gpt-4.1": false, "gpt-4o-mini": false,
		"chatgpt-4o-latest": false, "ft:gpt-4.1-mini:acme::abc123": false, "ft:o4-mini:acme::abc123": true} {
		p, err := buildResponsesRequest(Config{Model: name}, conversation())
		if err != nil {
			t.Fatal(err)
		}
		if got := len(p.Include) == 1 && p.Include[0] == includeReasoning; got != want {
			t.Errorf("%s: include %v", name, p.Include)
		}
	}
}

// With Cache set, the request carries the generator's prompt_cache_key,
// fitted as for Chat Completions.
func TestResponsesPromptCacheKey(t *testing.T) {
	long := "fsd/20261130-203046-8a83c162/task:" + string(make([]byte, 80))
	for key, want := range map[string]string{"fsd/run/host": "fsd/run/host", long: cacheKey(long)} {
		req := conversation()
		req.Cache, req.CacheKey = true, key
		p, err := buildResponsesRequest(Config{Model: "gpt-5.4"}, req)
		if err != nil {
			t.Fatal(err)
		}
		if p.PromptCacheKey != want || len(p.PromptCacheKey) > MaxCacheKey {
			t.Errorf("prompt_cache_key %q, want %q", p.PromptCacheKey, want)
		}
	}
	if p, _ := buildResponsesRequest(Config{Model: "gpt-5.4"}, conversation()); p.PromptCacheKey != "" {
		t.Errorf("without Cache: prompt_cache_key %q", p.PromptCacheKey)
	}
}

// A model taken to reason that refuses the include fails with OpenAI's
// words and what to use instead.
func TestResponsesModelThatDoesNotReason(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Status: 400, Body: `{"error":{"message":"Encrypted content is not supported with this model.","type":"invalid_request_error","param":"include","code":null}}`})
	defer srv.Close()
	m, err := NewResponses(Config{Model: "my-model", APIKey: testKey, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(context.Background(), conversation())
	want := "openai-responses: HTTP 400 Bad Request: Encrypted content is not supported with this model.; the model does not reason: use openai/my-model"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}
