package openai

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/internal/providertest"
	"github.com/fsdrun/fsd/model/internal/specs"
)

// Every request body the Responses client produces is a create-response
// request as OpenAI's OpenAPI document describes it: the shared variants
// (tools, caching, streaming, typed output, images, edges), and a step
// that sends reasoning items, an answer's message and calls back with
// their ids.
func TestResponsesRequestsMatchPublishedSpec(t *testing.T) {
	for name, body := range rprov.Bodies(t) {
		t.Run(name, func(t *testing.T) { specs.Validate(t, "openai-responses-request", body) })
	}
	t.Run("images to a model that takes them", func(t *testing.T) {
		srv := fakeserver.New(fakeserver.Reply{Body: rOKBody})
		defer srv.Close()
		m, err := NewResponses(Config{Model: "gpt-5.4", APIKey: testKey, BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Generate(context.Background(), providertest.Variants(rprov)["images"]); err != nil {
			t.Fatal(err)
		}
		body := srv.Requests()[0].Body
		if !strings.Contains(string(body), `"input_image"`) {
			t.Fatalf("no input_image sent:\n%s", body)
		}
		specs.Validate(t, "openai-responses-request", body)
	})
	t.Run("reasoning sent back", func(t *testing.T) {
		req := conversation()
		req.Messages[1].State = &model.State{Model: "openai-responses/gpt-test", Data: json.RawMessage(
			`[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAAB-enc-1"},{"type":"message","id":"msg_1"},` +
				`{"type":"function_call","id":"fc_1","call_id":"call_1"},{"type":"function_call","id":"fc_2","call_id":"call_2"}]`)}
		srv := fakeserver.New(fakeserver.Reply{Body: rOKBody})
		defer srv.Close()
		if _, err := rprov.Model(t, srv).Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		body := srv.Requests()[0].Body
		if n := len(inputOf(t, body)); n != 8 {
			t.Errorf("%d input items, want 8 (the reasoning item added)", n)
		}
		specs.Validate(t, "openai-responses-request", body)
	})
}

// The response examples of OpenAI's OpenAPI document for POST /responses
// parse to the answers they show.
func TestResponsesReferenceResponses(t *testing.T) {
	rprov.References(t, []providertest.Reference{
		{File: "responses-text.json", Want: &model.Response{Text: "In a peaceful grove beneath a silver moon, a unicorn named Lumina discovered a hidden pool that reflected the stars. " +
			"As she dipped her horn into the water, the pool began to shimmer, revealing a pathway to a magical realm of endless night skies. " +
			"Filled with wonder, Lumina whispered a wish for all who dream to find their own hidden magic, and as she glanced back, her hoofprints sparkled like stardust.",
			Usage: model.Usage{InputTokens: 36, OutputTokens: 87}, ID: "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b", Served: "gpt-5.4"}},
		{File: "responses-functions.json", Want: &model.Response{Calls: []model.ToolCall{{ID: "call_unLAR8MvFNptuiZK6K6HCy5k", Name: "get_current_weather",
			Args: json.RawMessage(`{"location":"Boston, MA","unit":"celsius"}`)}}, Usage: model.Usage{InputTokens: 291, OutputTokens: 23},
			ID: "resp_67ca09c5efe0819096d0511c92b8c890096610f474011cc0", Served: "gpt-5.4"}},
		{File: "responses-reasoning.json", Want: &model.Response{Text: "The classic tongue twister...",
			Usage: model.Usage{InputTokens: 81, OutputTokens: 1035, ReasoningTokens: 832},
			ID:    "resp_67ccd7eca01881908ff0b5146584e408072912b2993db808", Served: "o1-2024-12-17"}},
		{File: "responses-streaming.sse", Want: &model.Response{Text: "Hi there! How can I assist you today?", Usage: model.Usage{InputTokens: 37, OutputTokens: 11},
			ID: "resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654", Served: "gpt-5.4"}},
	})
}
