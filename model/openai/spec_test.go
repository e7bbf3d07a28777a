package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/providertest"
	"github.com/fsdrun/fsd/model/internal/specs"
	"github.com/fsdrun/fsd/model/retry"
)

// Every request body the client produces is a chat completion request as
// OpenAI's OpenAPI document describes it.
func TestRequestsMatchPublishedSpec(t *testing.T) {
	for name, body := range prov.Bodies(t) {
		t.Run(name, func(t *testing.T) { specs.Validate(t, "openai-chat-completions-request", body) })
	}
	// A model that takes images (gpt-test takes none) gets image parts.
	vision := prov
	vision.New = func(url string, p retry.Policy) (model.Model, error) {
		return New(Config{Model: "gpt-5.4-mini", APIKey: testKey, BaseURL: url + "/v1", Retry: p})
	}
	body := vision.Bodies(t)["images"]
	if !strings.Contains(string(body), `"image_url"`) {
		t.Fatalf("no image part sent to a vision model:\n%s", body)
	}
	specs.Validate(t, "openai-chat-completions-request", body)
}

// The response examples of OpenAI's OpenAPI document parse to the
// answers they show.
func TestReferenceResponses(t *testing.T) {
	prov.References(t, []providertest.Reference{
		{File: "default.json", Want: &model.Response{Text: "Hello! How can I assist you today?", Usage: model.Usage{InputTokens: 19, OutputTokens: 10},
			ID: "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", Served: "gpt-5.4", FinishReason: "stop"}},
		{File: "functions.json", Want: &model.Response{Calls: []model.ToolCall{{ID: "call_abc123", Name: "get_current_weather", Args: json.RawMessage("{\n\"location\": \"Boston, MA\"\n}")}},
			Usage: model.Usage{InputTokens: 82, OutputTokens: 17}, ID: "chatcmpl-abc123", Served: "gpt-4o-mini", FinishReason: "tool_calls"}},
		{File: "streaming.sse", Want: &model.Response{Text: "Hello", ID: "chatcmpl-123", Served: "gpt-4o-mini", FinishReason: "stop"}},
	})
}

// A request's bound on its answer is sent as max_completion_tokens, and
// through the Responses API as max_output_tokens.
func TestRequestBound(t *testing.T) {
	prov.Bound(t, func(b map[string]any) any { return b["max_completion_tokens"] })
	rprov.Bound(t, func(b map[string]any) any { return b["max_output_tokens"] })
}
