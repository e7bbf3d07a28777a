package openai

import (
	"encoding/json"
	"fmt"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/fsdrun/fsd/model"
)

// buildParams maps a model.Request to a chat completion request.
func buildParams(cfg Config, req *model.Request) (oai.ChatCompletionNewParams, error) {
	p := oai.ChatCompletionNewParams{Model: shared.ChatModel(cfg.Model)}
	if cfg.MaxTokens > 0 {
		p.MaxCompletionTokens = oai.Int(int64(cfg.MaxTokens))
	}
	// The current-context block leads as a system message: "developer" is
	// OpenAI's newer name for it, but Ollama, vLLM and llama.cpp only know
	// "system", and OpenAI still accepts it.
	if req.Context != "" {
		p.Messages = append(p.Messages, oai.SystemMessage(req.Context))
	}
	for i, msg := range req.Messages {
		mp, err := messageParam(msg)
		if err != nil {
			return p, fmt.Errorf("openai: message %d: %w", i+1, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	for _, t := range req.Tools {
		schema, err := Schema(t.Parameters)
		if err != nil {
			return p, fmt.Errorf("openai: tool %s: %w", t.Name, err)
		}
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fd.Description = oai.String(t.Description)
		}
		p.Tools = append(p.Tools, oai.ChatCompletionFunctionTool(fd))
	}
	return p, nil
}

func messageParam(msg model.Message) (oai.ChatCompletionMessageParamUnion, error) {
	switch msg.Role {
	case model.User, model.Context:
		// A context line is the runtime's note between turns or after a
		// group's tool results: a user message is valid in both places.
		return oai.UserMessage(msg.Text), nil
	case model.Tool:
		if msg.CallID == "" {
			return oai.ChatCompletionMessageParamUnion{}, fmt.Errorf("tool result without a call id")
		}
		// Chat Completions has no error flag on tool results: the text is
		// all the model sees, and fsd's tool errors already say they are.
		return oai.ToolMessage(msg.Text, msg.CallID), nil
	case model.Assistant:
		a := oai.ChatCompletionAssistantMessageParam{}
		if msg.Text != "" || len(msg.Calls) == 0 {
			a.Content.OfString = oai.String(msg.Text)
		}
		for _, c := range msg.Calls {
			args := string(c.Args)
			if args == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
					ID:       c.ID,
					Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args},
				},
			})
		}
		return oai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	default:
		return oai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// Schema decodes a tool's JSON Schema into the object the SDK sends. An
// absent schema becomes an empty object schema: both APIs require one.
func Schema(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("parameters are not a JSON Schema object: %w", err)
	}
	if _, ok := m["type"]; !ok {
		m["type"] = "object"
	}
	return m, nil
}

// parseCompletion maps the first choice back to a model.Response.
func parseCompletion(c *oai.ChatCompletion) (*model.Response, error) {
	if c == nil || len(c.Choices) == 0 {
		id := ""
		if c != nil {
			id = c.ID
		}
		return nil, errNoChoices(id)
	}
	msg := c.Choices[0].Message
	resp := &model.Response{
		Text:  msg.Content,
		Usage: model.Usage{InputTokens: int(c.Usage.PromptTokens), OutputTokens: int(c.Usage.CompletionTokens)},
	}
	if resp.Text == "" && msg.Refusal != "" {
		resp.Text = msg.Refusal
	}
	for _, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom tools are never offered by fsd
		}
		resp.Calls = append(resp.Calls, model.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: Args(tc.Function.Arguments)})
	}
	return resp, nil
}

// Args turns the arguments string a model produced into JSON. Models do
// emit broken JSON; it is kept as a JSON string so the tool's argument check
// fails and the model reads why, instead of the transcript breaking.
func Args(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}
