package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/specs"
)

// A tool result's image goes inside its tool_result as an image block,
// as the published request schema accepts; audio, which the API does not
// take, stays out.
func TestToolImageInsideTheResult(t *testing.T) {
	req := &model.Request{Messages: []model.Message{
		{Role: model.User, Text: "Look."},
		{Role: model.Assistant, Calls: []model.ToolCall{{ID: "c1", Name: "shot", Args: json.RawMessage(`{}`)}}},
		{Role: model.Tool, CallID: "c1", Name: "shot", Text: "a dot", Media: []model.Media{{MIME: "image/png", Data: []byte("PNG")}, {MIME: "audio/wav", Data: []byte("RIFF")}}},
	}}
	p, err := buildRequest(Config{Model: "claude-test", MaxTokens: 100}, req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	specs.Validate(t, "anthropic-messages-request", body)
	var got struct {
		Messages []struct {
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	var result, want any
	_ = json.Unmarshal(got.Messages[2].Content[0], &result)
	_ = json.Unmarshal([]byte(`{"type": "tool_result", "tool_use_id": "c1", "content": [
	  {"type": "text", "text": "a dot"},
	  {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "UE5H"}}]}`), &want)
	if diff := cmp.Diff(want, result); diff != "" {
		t.Errorf("tool_result (-want +got):\n%s", diff)
	}
}
