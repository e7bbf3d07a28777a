package openai

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/specs"
)

// A tool result's images and audio go in one user message after the
// group of tool messages (a tool message takes text only), as data URLs
// and input_audio parts the published request schema accepts.
func TestToolMediaFollowTheResults(t *testing.T) {
	req := &model.Request{Messages: []model.Message{
		{Role: model.User, Text: "Look."},
		{Role: model.Assistant, Calls: []model.ToolCall{{ID: "c1", Name: "shot", Args: json.RawMessage(`{}`)}, {ID: "c2", Name: "rec", Args: json.RawMessage(`{}`)}}},
		{Role: model.Tool, CallID: "c1", Name: "shot", Text: "a dot", Media: []model.Media{{MIME: "image/png", Data: []byte("PNG")}}},
		{Role: model.Tool, CallID: "c2", Name: "rec", Text: "a beep", Media: []model.Media{{MIME: "audio/wav", Data: []byte("RIFF")}, {MIME: "audio/ogg", Data: []byte("OggS")}}},
	}}
	p, err := buildRequest(Config{Model: "gpt-test"}, req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	specs.Validate(t, "openai-chat-completions-request", body)
	var got struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 5 {
		t.Fatalf("%d messages, want the 4 and one of media:\n%s", len(got.Messages), body)
	}
	var last, want any
	_ = json.Unmarshal(got.Messages[4], &last)
	_ = json.Unmarshal([]byte(`{"role": "user", "content": [
	  {"type": "text", "text": "The result of call c1 (shot) came with this media:"},
	  {"type": "image_url", "image_url": {"url": "data:image/png;base64,UE5H"}},
	  {"type": "text", "text": "The result of call c2 (rec) came with this media:"},
	  {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}]}`), &want)
	if diff := cmp.Diff(want, last); diff != "" {
		t.Errorf("media message (-want +got):\n%s", diff)
	}
}
