package anthropic

import (
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/fsdrun/fsd/model"
)

// buildParams maps a model.Request to a Messages request.
func buildParams(cfg Config, req *model.Request) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{Model: sdk.Model(cfg.Model), MaxTokens: int64(cfg.MaxTokens)}
	if req.Context != "" {
		p.System = []sdk.TextBlockParam{{Text: req.Context}}
	}
	for i, msg := range req.Messages {
		role, blocks, err := messageBlocks(msg)
		if err != nil {
			return p, fmt.Errorf("anthropic: message %d: %w", i+1, err)
		}
		if len(blocks) == 0 {
			continue // the API rejects empty content; an empty message says nothing
		}
		// Consecutive turns of one role merge: tool results of one
		// assistant turn go back in a single user message, and a user
		// message that follows them joins it (results first, as required).
		if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == role {
			p.Messages[n-1].Content = append(p.Messages[n-1].Content, blocks...)
			continue
		}
		p.Messages = append(p.Messages, sdk.MessageParam{Role: role, Content: blocks})
	}
	for _, t := range req.Tools {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return p, fmt.Errorf("anthropic: tool %s: %w", t.Name, err)
		}
		tp := &sdk.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tp})
	}
	return p, nil
}

func messageBlocks(msg model.Message) (sdk.MessageParamRole, []sdk.ContentBlockParamUnion, error) {
	switch msg.Role {
	case model.User, model.Context:
		// A context line joins the user turn it falls in (after the tool
		// results of its group, or after the person's message): the merge
		// in buildParams keeps roles alternating.
		if msg.Text == "" {
			return sdk.MessageParamRoleUser, nil, nil
		}
		return sdk.MessageParamRoleUser, []sdk.ContentBlockParamUnion{sdk.NewTextBlock(msg.Text)}, nil
	case model.Tool:
		if msg.CallID == "" {
			return "", nil, fmt.Errorf("tool result without a call id")
		}
		r := sdk.ToolResultBlockParam{ToolUseID: msg.CallID}
		if msg.Text != "" { // an empty text block is rejected; no content is not
			r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: msg.Text}}}
		}
		if msg.IsError {
			r.IsError = sdk.Bool(true)
		}
		return sdk.MessageParamRoleUser, []sdk.ContentBlockParamUnion{{OfToolResult: &r}}, nil
	case model.Assistant:
		var blocks []sdk.ContentBlockParamUnion
		if msg.Text != "" {
			blocks = append(blocks, sdk.NewTextBlock(msg.Text))
		}
		for _, c := range msg.Calls {
			input := json.RawMessage(c.Args)
			if len(input) == 0 || !json.Valid(input) {
				input = json.RawMessage("{}")
			}
			blocks = append(blocks, sdk.NewToolUseBlock(c.ID, input, c.Name))
		}
		return sdk.MessageParamRoleAssistant, blocks, nil
	default:
		return "", nil, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// inputSchema splits a tool's JSON Schema into the SDK's input_schema: its
// properties and required list, everything else carried as extra fields so
// nothing of the author's schema is lost.
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	s := sdk.ToolInputSchemaParam{Properties: map[string]any{}}
	if len(raw) == 0 || string(raw) == "null" {
		return s, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return s, fmt.Errorf("parameters are not a JSON Schema object: %w", err)
	}
	if p, ok := m["properties"]; ok {
		s.Properties = p
	}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				s.Required = append(s.Required, name)
			}
		}
	}
	for k, v := range m {
		switch k {
		case "type", "properties", "required":
			continue
		}
		if s.ExtraFields == nil {
			s.ExtraFields = map[string]any{}
		}
		s.ExtraFields[k] = v
	}
	return s, nil
}

// parseMessage maps an answer back to a model.Response. Input tokens count
// cached ones too: Anthropic reports them apart, fsd reports what was sent.
func parseMessage(msg *sdk.Message) *model.Response {
	resp := &model.Response{Usage: model.Usage{
		InputTokens:  int(msg.Usage.InputTokens + msg.Usage.CacheCreationInputTokens + msg.Usage.CacheReadInputTokens),
		OutputTokens: int(msg.Usage.OutputTokens),
	}}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			resp.Text += b.Text
		case "tool_use":
			resp.Calls = append(resp.Calls, model.ToolCall{ID: b.ID, Name: b.Name, Args: args(b.Input)})
		}
	}
	return resp
}

// args keeps a tool's input as JSON; a truncated input (max_tokens hit in
// the middle of a call) is kept as a JSON string so the tool's argument check
// fails and the model reads why.
func args(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(raw) {
		return append(json.RawMessage(nil), raw...)
	}
	b, _ := json.Marshal(string(raw))
	return b
}
