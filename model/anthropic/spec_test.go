package anthropic

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"testing"

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
	for _, tt := range []struct {
		file string
		want *model.Response
	}{
		{"text.json", &model.Response{Text: "Hi! My name is Claude.",
			Usage: model.Usage{InputTokens: 2095 + 2051 + 2051, OutputTokens: 503, CachedInputTokens: 2051, CacheWriteTokens: 2051}}},
		{"tool_use.json", &model.Response{Text: "I'll check the current weather in San Francisco for you.",
			Calls: []model.ToolCall{{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Args: json.RawMessage(`{"location": "San Francisco, CA", "unit": "celsius"}`)}},
			Usage: model.Usage{InputTokens: 384, OutputTokens: 93}}},
		{"streaming.sse", &model.Response{Text: "Hello!", Usage: model.Usage{InputTokens: 25, OutputTokens: 15}}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "reference", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			reply, req := fakeserver.Reply{Body: string(body)}, conversation()
			if strings.HasSuffix(tt.file, ".sse") {
				reply.Header, reply.Chunked = sse, true
				req.OnText = func(string) {}
			}
			got, _ := prov.Call(t, reply, req)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
