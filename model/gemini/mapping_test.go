package gemini

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
)

// contentsOf is the contents of a request body.
func contentsOf(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var b struct {
		Contents []map[string]any `json:"contents"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	return b.Contents
}

// A function-call round trip: the calls of one answer, their ids and the
// thought signature Gemini sent with the first, go back in the next
// request exactly as received, each result under its call's id and name.
func TestFunctionCallRoundTrip(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Body: okBody}, fakeserver.Reply{Body: `{"candidates":[{"content":{"role":"model","parts":[{"text":"Done."}]},"finishReason":"STOP","index":0}]}`})
	defer srv.Close()
	m := prov.Model(t, srv)
	req := &model.Request{Messages: []model.Message{{Role: model.User, Text: "Report."}}}
	first, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// The engine names a call that came without an id, and keeps the
	// answer's state on its message.
	first.Calls[1].ID = "call_1_2"
	req.Messages = append(req.Messages,
		model.Message{Role: model.Assistant, Text: first.Text, Calls: first.Calls, State: first.State},
		model.Message{Role: model.Tool, CallID: "fc_a", Name: "read_skill", Text: "brand rules"},
		model.Message{Role: model.Tool, CallID: "call_1_2", Text: "[]"})
	second, err := m.Generate(context.Background(), req)
	if err != nil || second.Text != "Done." {
		t.Fatalf("second answer %+v, %v", second, err)
	}
	var want []map[string]any
	_ = json.Unmarshal([]byte(`[
	  {"role": "user", "parts": [{"text": "Report."}]},
	  {"role": "model", "parts": [
	    {"text": "Two calls."},
	    {"functionCall": {"id": "fc_a", "name": "read_skill", "args": {"id": "brand"}}, "thoughtSignature": "c2lnLWE="},
	    {"functionCall": {"id": "call_1_2", "name": "listTasks", "args": {}}}]},
	  {"role": "user", "parts": [
	    {"functionResponse": {"id": "fc_a", "name": "read_skill", "response": {"output": "brand rules"}}},
	    {"functionResponse": {"id": "call_1_2", "name": "listTasks", "response": {"output": "[]"}}}]}
	]`), &want)
	if diff := cmp.Diff(want, contentsOf(t, srv.Requests()[1].Body)); diff != "" {
		t.Errorf("second request's contents (-want +got):\n%s", diff)
	}
}

// Calls another model made carry no signature of this model's: the first
// call of each such step gets the one Gemini documents for foreign
// history, so Gemini 3 takes the step — also when the state is another
// Gemini model's, whose signatures this one cannot read. A step with its
// own keeps it, and arguments that are no JSON object (another model's
// slip) are wrapped as one.
func TestForeignSignature(t *testing.T) {
	other := &model.State{Model: "gemini/gemini-other", Data: json.RawMessage(`{"calls":{"fc_4":"b3RoZXI="}}`)}
	ours := &model.State{Model: "gemini/gemini-test", Data: json.RawMessage(`{"calls":{"fc_3":"c2ln"}}`)}
	req := &model.Request{Messages: []model.Message{
		{Role: model.User, Text: "Go."},
		{Role: model.Assistant, Calls: []model.ToolCall{{ID: "toolu_1", Name: "a", Args: json.RawMessage(`{}`)}, {ID: "toolu_2", Name: "b", Args: json.RawMessage(`"{\"x\":"`)}}},
		{Role: model.Tool, CallID: "toolu_1", Name: "a", Text: "1"},
		{Role: model.Tool, CallID: "toolu_2", Name: "b", Text: "bad arguments", IsError: true},
		{Role: model.Assistant, Calls: []model.ToolCall{{ID: "fc_3", Name: "a"}}, State: ours},
		{Role: model.Tool, CallID: "fc_3", Name: "a", Text: "3"},
		{Role: model.Assistant, Calls: []model.ToolCall{{ID: "fc_4", Name: "a"}}, State: other},
		{Role: model.Tool, CallID: "fc_4", Name: "a", Text: "4"},
	}}
	_, sent := prov.Call(t, fakeserver.Reply{Body: okBody}, req)
	var want []map[string]any
	_ = json.Unmarshal([]byte(`[
	  {"role": "user", "parts": [{"text": "Go."}]},
	  {"role": "model", "parts": [
	    {"functionCall": {"id": "toolu_1", "name": "a", "args": {}}, "thoughtSignature": "skip_thought_signature_validator"},
	    {"functionCall": {"id": "toolu_2", "name": "b", "args": {"value": "{\"x\":"}}}]},
	  {"role": "user", "parts": [
	    {"functionResponse": {"id": "toolu_1", "name": "a", "response": {"output": "1"}}},
	    {"functionResponse": {"id": "toolu_2", "name": "b", "response": {"error": "bad arguments"}}}]},
	  {"role": "model", "parts": [{"functionCall": {"id": "fc_3", "name": "a"}, "thoughtSignature": "c2ln"}]},
	  {"role": "user", "parts": [{"functionResponse": {"id": "fc_3", "name": "a", "response": {"output": "3"}}}]},
	  {"role": "model", "parts": [{"functionCall": {"id": "fc_4", "name": "a"}, "thoughtSignature": "skip_thought_signature_validator"}]},
	  {"role": "user", "parts": [{"functionResponse": {"id": "fc_4", "name": "a", "response": {"output": "4"}}}]}
	]`), &want)
	if diff := cmp.Diff(want, contentsOf(t, sent)); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
}

// Images and audio go as inline data: a user message's after its text, a
// tool result's after the result, in the same user turn.
func TestMedia(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	wav := []byte("RIFF....WAVE")
	req := &model.Request{Messages: []model.Message{
		{Role: model.User, Text: "What is this?", Media: []model.Media{{MIME: "image/png", Data: png}}},
		{Role: model.Assistant, Calls: []model.ToolCall{{ID: "fc_1", Name: "record"}}, State: &model.State{Model: "gemini/gemini-test", Data: json.RawMessage(`{"calls":{"fc_1":"c2ln"}}`)}},
		{Role: model.Tool, CallID: "fc_1", Name: "record", Text: "one clip", Media: []model.Media{{MIME: "audio/wav", Data: wav}}},
	}}
	_, sent := prov.Call(t, fakeserver.Reply{Body: okBody}, req)
	var want []map[string]any
	_ = json.Unmarshal([]byte(`[
	  {"role": "user", "parts": [{"text": "What is this?"}, {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgpmYWtl"}}]},
	  {"role": "model", "parts": [{"functionCall": {"id": "fc_1", "name": "record"}, "thoughtSignature": "c2ln"}]},
	  {"role": "user", "parts": [
	    {"functionResponse": {"id": "fc_1", "name": "record", "response": {"output": "one clip"}}},
	    {"inlineData": {"mimeType": "audio/wav", "data": "UklGRi4uLi5XQVZF"}}]}
	]`), &want)
	if diff := cmp.Diff(want, contentsOf(t, sent)); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
}

// A signed call that came without an id gets one made from its signature,
// so the state names it; a text's signature is kept for the text.
func TestSignedCallWithoutID(t *testing.T) {
	resp, _ := prov.Call(t, fakeserver.Reply{Body: `{"candidates":[{"content":{"role":"model","parts":[
	  {"functionCall":{"name":"a","args":{}},"thoughtSignature":"c2lnLTE="},{"functionCall":{"name":"b"}},
	  {"text":"","thoughtSignature":"dGV4dA=="}]},"finishReason":"STOP","index":0}]}`}, conversation())
	if len(resp.Calls) != 2 || !strings.HasPrefix(resp.Calls[0].ID, "sig_") || resp.Calls[1].ID != "" {
		t.Fatalf("calls %+v", resp.Calls)
	}
	want := `{"calls":{"` + resp.Calls[0].ID + `":"c2lnLTE="},"text":"dGV4dA=="}`
	if resp.State == nil || resp.State.Model != "gemini/gemini-test" || string(resp.State.Data) != want {
		t.Errorf("state %+v, want %s", resp.State, want)
	}
}

// A run without input has nothing to send as its first message; Gemini
// refuses a request without contents, so the model is asked to go by its
// instruction.
func TestEmptyInput(t *testing.T) {
	_, sent := prov.Call(t, fakeserver.Reply{Body: okBody}, &model.Request{Context: "You welcome new colleagues.", Messages: []model.Message{{Role: model.User}}})
	var want []map[string]any
	_ = json.Unmarshal([]byte(`[{"role": "user", "parts": [{"text": "`+EmptyInput+`"}]}]`), &want)
	if diff := cmp.Diff(want, contentsOf(t, sent)); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
}
