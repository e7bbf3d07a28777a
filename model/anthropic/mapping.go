package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/outschema"
)

// buildRequest maps a model.Request to a Messages request.
func buildRequest(cfg Config, req *model.Request) (*messagesRequest, error) {
	p := &messagesRequest{Model: cfg.Model, MaxTokens: req.Bound(cfg.MaxTokens), Stream: req.OnText != nil}
	if req.Context != "" {
		p.System = []textBlock{{Type: "text", Text: req.Context}}
	}
	volatile := 0 // blocks at the end that change between requests
	for i, msg := range req.Messages {
		role, blocks, err := messageBlocks(msg)
		if err != nil {
			return nil, fmt.Errorf("anthropic: message %d: %w", i+1, err)
		}
		if len(blocks) == 0 {
			continue // the API rejects empty content; an empty message says nothing
		}
		if msg.Volatile {
			volatile += len(blocks)
		} else {
			volatile = 0
		}
		// Consecutive turns of one role merge: tool results of one
		// assistant turn go back in a single user message, and a user
		// message that follows them joins it (results first, as required).
		if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == role {
			p.Messages[n-1].Content = append(p.Messages[n-1].Content, blocks...)
			continue
		}
		p.Messages = append(p.Messages, msgParam{Role: role, Content: blocks})
	}
	for _, t := range req.Tools {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("anthropic: tool %s: %w", t.Name, err)
		}
		p.Tools = append(p.Tools, toolParam{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	if req.Output != nil {
		// Constraints the grammar cannot express are left out of what is
		// sent; a schema that cannot fit at all is not sent (see
		// outschema). fsd checks the answer in every case.
		if s, ok := outschema.Relaxed(outschema.Decode(req.Output.Schema)); ok {
			p.OutputConfig = &outputConfig{Format: &outputFormat{Type: "json_schema", Schema: s}}
		}
	}
	if req.Cache {
		markCache(p, volatile)
	}
	return p, nil
}

// markCache sets the prompt-cache breakpoints, all 4 allowed: after the
// tools, after the system block, after the user message before the last
// assistant message, and after the last message. The engine orders
// requests most stable first and a generator's window grows at its end, so
// the tools and system prefixes are read back until a load changes them,
// and the previous request of the same generator ended where the third
// breakpoint is: it is read back whole however many blocks the last step
// added (the provider looks for earlier cache entries only about 20 blocks
// back from a breakpoint, and a step with many parallel calls adds more).
// The last breakpoint is what the next request reads back. It goes before
// the request's last volatile blocks (model.Message.Volatile: the board's
// status), so that a change of them leaves every cached prefix whole.
//
// K5: nothing volatile before the last breakpoint.
func markCache(p *messagesRequest, volatile int) {
	if n := len(p.Tools); n > 0 {
		p.Tools[n-1].CacheControl = ephemeral
	}
	if n := len(p.System); n > 0 {
		p.System[n-1].CacheControl = ephemeral
	}
	last := len(p.Messages) - 1
	mark := func(i int) {
		if c := p.Messages[i].Content; len(c) > 0 {
			c[len(c)-1].CacheControl = ephemeral
		}
	}
	if last < 0 {
		return
	}
	if c := p.Messages[last].Content; volatile > 0 && volatile < len(c) {
		c[len(c)-1-volatile].CacheControl = ephemeral
	} else if volatile == 0 {
		mark(last)
	} else if last > 0 {
		// The last message is all volatile: the one before ends the prefix.
		mark(last - 1)
	}
	for i := last - 1; i > 0; i-- {
		if p.Messages[i].Role == "assistant" {
			if p.Messages[i-1].Role == "user" {
				mark(i - 1)
			}
			return
		}
	}
}

func messageBlocks(msg model.Message) (string, []block, error) {
	switch msg.Role {
	case model.User, model.Context:
		// A context line joins the user turn it falls in (after the tool
		// results of its group, or after the person's message): the merge
		// in buildRequest keeps roles alternating.
		if msg.Text == "" {
			return "user", nil, nil
		}
		return "user", []block{{Type: "text", Text: msg.Text}}, nil
	case model.Tool:
		if msg.CallID == "" {
			return "", nil, fmt.Errorf("tool result without a call id")
		}
		r := block{Type: "tool_result", ToolUseID: msg.CallID, IsError: msg.IsError}
		if msg.Text != "" { // an empty text block is rejected; no content is not
			r.Content = []resultPart{{Type: "text", Text: msg.Text}}
		}
		for _, m := range msg.Media {
			// P2: a tool_result takes image blocks beside its text; the API
			// takes no audio, so a clip stays with its artifact.
			if m.IsImage() {
				r.Content = append(r.Content, resultPart{Type: "image",
					Source: &imageSource{Type: "base64", MediaType: m.MIME, Data: base64.StdEncoding.EncodeToString(m.Data)}})
			}
		}
		return "user", []block{r}, nil
	case model.Assistant:
		var blocks []block
		if msg.Text != "" {
			blocks = append(blocks, block{Type: "text", Text: msg.Text})
		}
		for _, c := range msg.Calls {
			input := json.RawMessage(c.Args)
			if len(input) == 0 || !json.Valid(input) {
				input = json.RawMessage("{}")
			}
			blocks = append(blocks, block{Type: "tool_use", ID: c.ID, Name: c.Name, Input: input})
		}
		return "assistant", blocks, nil
	default:
		return "", nil, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// inputSchema is a tool's JSON Schema as input_schema: an object schema
// (the API accepts no other), with properties even when there are none,
// and everything else of the author's schema kept.
func inputSchema(raw json.RawMessage) (map[string]any, error) {
	m := map[string]any{}
	if len(raw) != 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("parameters are not a JSON Schema object: %w", err)
		}
	}
	m["type"] = "object"
	if _, ok := m["properties"]; !ok {
		m["properties"] = map[string]any{}
	}
	return m, nil
}

// parseWhole maps a whole answer. A JSON body without an id or content is
// no message (a proxy's own reply, say) and is refused rather than taken
// for an empty answer.
func parseWhole(msg *message) (*model.Response, error) {
	if msg.ID == "" && msg.Content == nil {
		return nil, errors.New("anthropic: the server's answer is not a message: it has no id and no content")
	}
	return parseMessage(msg)
}

// parseMessage maps an answer back to a model.Response. Input tokens count
// cached ones too: Anthropic reports them apart, fsd reports what was sent.
func parseMessage(msg *message) (*model.Response, error) {
	resp := &model.Response{Usage: model.Usage{
		InputTokens:       msg.Usage.InputTokens + msg.Usage.CacheCreationInputTokens + msg.Usage.CacheReadInputTokens,
		OutputTokens:      msg.Usage.OutputTokens,
		CachedInputTokens: msg.Usage.CacheReadInputTokens,
		CacheWriteTokens:  msg.Usage.CacheCreationInputTokens,
	}, ID: msg.ID, Served: msg.Model, FinishReason: msg.StopReason}
	size := 0
	var text strings.Builder // joined once: += would copy per block
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
			size += len(b.Text)
		case "tool_use":
			size += len(b.Input)
			resp.Calls = append(resp.Calls, model.ToolCall{ID: b.ID, Name: b.Name, Args: args(b.Input)})
		}
	}
	if size > model.MaxResponseBytes {
		return nil, tooLarge()
	}
	resp.Text = text.String()
	return resp, nil
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
