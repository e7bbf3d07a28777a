package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/providertest"
	"github.com/fsdrun/fsd/model/internal/specs"
)

// Every request body the client produces is a Messages request as
// Anthropic's API reference describes it.
func TestRequestsMatchPublishedSpec(t *testing.T) {
	for name, body := range prov.Bodies(t) {
		t.Run(name, func(t *testing.T) { specs.Validate(t, "anthropic-messages-request", body) })
	}
}

// Responses shaped like the examples of Anthropic's documentation parse
// to the answers they show.
func TestReferenceResponses(t *testing.T) {
	prov.References(t, []providertest.Reference{
		{File: "text.json", Want: &model.Response{Text: "Hi! My name is Claude.",
			Usage: model.Usage{InputTokens: 2095 + 2051 + 2051, OutputTokens: 503, CachedInputTokens: 2051, CacheWriteTokens: 2051},
			ID:    "msg_013Zva2CMHLNnXjNJJKqJ2EF", Served: "claude-sonnet-4-5", FinishReason: "end_turn", MaxTokens: DefaultMaxTokens}},
		{File: "tool_use.json", Want: &model.Response{Text: "I'll check the current weather in San Francisco for you.",
			Calls: []model.ToolCall{{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Args: json.RawMessage(`{"location": "San Francisco, CA", "unit": "celsius"}`)}},
			Usage: model.Usage{InputTokens: 384, OutputTokens: 93},
			ID:    "msg_01Aq9w938a90dw8q", Served: "claude-sonnet-4-5", FinishReason: "tool_use", MaxTokens: DefaultMaxTokens}},
		{File: "streaming.sse", Want: &model.Response{Text: "Hello!", Usage: model.Usage{InputTokens: 25, OutputTokens: 15},
			ID: "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", Served: "claude-opus-4-7", FinishReason: "end_turn", MaxTokens: DefaultMaxTokens}},
	})
}

// A request's bound on its answer is sent as max_tokens, in place of the
// configured one when smaller.
func TestRequestBound(t *testing.T) {
	prov.Bound(t, func(b map[string]any) any { return b["max_tokens"] })
}
