package openai

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

// Every request body the client produces is a chat completion request as
// OpenAI's OpenAPI document describes it.
func TestRequestsMatchPublishedSpec(t *testing.T) {
	for name, body := range prov.Bodies(t) {
		t.Run(name, func(t *testing.T) { specs.Validate(t, "openai-chat-completions-request", body) })
	}
}

// The response examples of OpenAI's OpenAPI document parse to the
// answers they show.
func TestReferenceResponses(t *testing.T) {
	for _, tt := range []struct {
		file string
		want *model.Response
	}{
		{"default.json", &model.Response{Text: "Hello! How can I assist you today?", Usage: model.Usage{InputTokens: 19, OutputTokens: 10}}},
		{"functions.json", &model.Response{Calls: []model.ToolCall{{ID: "call_abc123", Name: "get_current_weather", Args: json.RawMessage("{\n\"location\": \"Boston, MA\"\n}")}},
			Usage: model.Usage{InputTokens: 82, OutputTokens: 17}}},
		{"streaming.sse", &model.Response{Text: "Hello"}},
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
