package openai

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/wire"
	"github.com/fsdrun/fsd/model/retry"
)

// includeReasoning is the include that has reasoning items come back
// with their encrypted content.
const includeReasoning = "reasoning.encrypted_content"

// buildResponsesRequest maps a model.Request to a Responses API request.
//
// M11: store is false and no request names a previous response: every
// request carries the whole window, reasoning items included, from the
// transcript.
func buildResponsesRequest(cfg Config, req *model.Request) (*responsesRequest, error) {
	p := &responsesRequest{
		Model: cfg.Model, Instructions: req.Context, Input: []any{},
		MaxOutputTokens: req.Bound(cfg.MaxTokens), Stream: req.OnText != nil,
	}
	if reasons(cfg.Model) {
		p.Include = []string{includeReasoning}
	}
	own := ResponsesName + "/" + cfg.Model
	for i, msg := range req.Messages {
		items, err := inputItems(msg, own)
		if err != nil {
			return nil, fmt.Errorf("%s: message %d: %w", ResponsesName, i+1, err)
		}
		p.Input = append(p.Input, items...)
	}
	for _, t := range req.Tools {
		schema, err := Schema(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("%s: tool %s: %w", ResponsesName, t.Name, err)
		}
		p.Tools = append(p.Tools, functionTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: schema})
	}
	if s := jsonSchemaOf(req.Output); s != nil {
		p.Text = &textParam{Format: &textFormat{Type: "json_schema", Name: s.Name, Schema: s.Schema, Strict: s.Strict}}
	}
	if req.Cache {
		p.PromptCacheKey = cacheKey(req.CacheKey)
	}
	return p, nil
}

// inputItems maps one transcript message to input items.
func inputItems(msg model.Message, own string) ([]any, error) {
	switch msg.Role {
	case model.User, model.Context:
		// A context line is the runtime's note between turns or after a
		// group's results: a user message is valid in both places.
		return []any{inputMessage{Type: "message", Role: "user", Content: withImages(msg)}}, nil
	case model.Tool:
		if msg.CallID == "" {
			return nil, fmt.Errorf("tool result without a call id")
		}
		// No error flag here either: fsd's tool errors say they are.
		return []any{functionOutput{Type: "function_call_output", CallID: msg.CallID, Output: withImages(msg)}}, nil
	case model.Assistant:
		return assistantItems(msg, own)
	default:
		return nil, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// withImages is a message's content: its text alone, or its text and its
// images as parts. Audio is not sent: the API takes none in input, and
// Fit has said so in the text.
func withImages(msg model.Message) any {
	var parts []any
	for _, m := range msg.Media {
		if m.IsImage() {
			parts = append(parts, inputImage{Type: "input_image", Detail: "auto",
				ImageURL: "data:" + m.MIME + ";base64," + base64.StdEncoding.EncodeToString(m.Data)})
		}
	}
	if len(parts) == 0 {
		return msg.Text
	}
	if msg.Text != "" {
		parts = append([]any{inputText{Type: "input_text", Text: msg.Text}}, parts...)
	}
	return parts
}

// assistantItems replays an assistant message. With state from this very
// model its output items come back in the order the API returned them,
// ids and reasoning items included (the API pairs a reasoning item with
// the item after it); the text and calls are the transcript's. Without,
// a message and calls of the transcript's, no ids.
//
// M12: reasoning goes back only to the model that made it.
func assistantItems(msg model.Message, own string) ([]any, error) {
	var kept []keptItem
	if data := msg.State.For(own); data != nil {
		if err := json.Unmarshal(data, &kept); err != nil {
			return nil, fmt.Errorf("the answer's state from %s is not what it wrote: %w", own, err)
		}
	}
	var items []any
	textSent := msg.Text == ""
	callSent := make([]bool, len(msg.Calls))
	for _, k := range kept {
		switch k.Type {
		case "reasoning":
			items = append(items, k)
		case "message":
			if !textSent {
				items = append(items, outputMessage{Type: "message", ID: k.ID, Role: "assistant", Status: "completed",
					Content: []outputText{{Type: "output_text", Text: msg.Text, Annotations: []any{}, Logprobs: []any{}}}})
				textSent = true
			}
		case "function_call":
			for i, c := range msg.Calls {
				if !callSent[i] && c.ID == k.CallID {
					items = append(items, call(c, k.ID))
					callSent[i] = true
					break
				}
			}
		}
	}
	if !textSent {
		items = append(items, inputMessage{Type: "message", Role: "assistant", Content: msg.Text})
	}
	for i, c := range msg.Calls {
		if !callSent[i] {
			items = append(items, call(c, ""))
		}
	}
	return items, nil
}

// call is a transcript's call as a function_call item.
func call(c model.ToolCall, id string) functionCall {
	args := string(c.Args)
	if args == "" {
		args = "{}"
	}
	return functionCall{Type: "function_call", ID: id, CallID: c.ID, Name: c.Name, Arguments: args}
}

// answer maps a Response (whole, or a stream's last event) to a
// model.Response; own names the model in the state it keeps.
func answer(r *responseObject, own string) (*model.Response, error) {
	if r.Status == "failed" {
		msg, code := "", ""
		if r.Error != nil {
			msg, code = r.Error.Message, r.Error.Code
		}
		return nil, responseError("the response failed", code, msg)
	}
	resp := &model.Response{Usage: responsesUsageOf(r.Usage), ID: r.ID, Served: r.Model}
	if r.IncompleteDetails != nil {
		// The API says why an answer stopped only when it is incomplete.
		resp.FinishReason = r.IncompleteDetails.Reason
	}
	var text strings.Builder
	var kept []keptItem
	reasoning := false
	size := 0
	for _, raw := range r.Output {
		var it outputItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, retry.Permanent(fmt.Errorf("%s: an output item is not what the API documents: %w", ResponsesName, err))
		}
		switch it.Type {
		case "message":
			if t := messageText(it); t != "" {
				if text.Len() > 0 {
					text.WriteString(itemBreak)
				}
				text.WriteString(t)
			}
			kept = append(kept, keptItem{Type: "message", ID: it.ID})
		case "function_call":
			size += len(it.Arguments)
			resp.Calls = append(resp.Calls, model.ToolCall{ID: it.CallID, Name: it.Name, Args: Args(it.Arguments)})
			kept = append(kept, keptItem{Type: "function_call", ID: it.ID, CallID: it.CallID})
		case "reasoning":
			// Without its encrypted content a reasoning item cannot be
			// sent back under store: false: the server kept nothing.
			if it.EncryptedContent != "" {
				kept = append(kept, keptItem{Type: "reasoning", ID: it.ID, Summary: &[]string{}, EncryptedContent: it.EncryptedContent})
				reasoning = true
			}
		}
	}
	resp.Text = text.String()
	if size+len(resp.Text) > model.MaxResponseBytes {
		return nil, wire.TooLarge(ResponsesName)
	}
	if resp.Text == "" && len(resp.Calls) == 0 {
		return nil, noAnswer(r)
	}
	if reasoning {
		data, _ := json.Marshal(kept)
		resp.State = &model.State{Model: own, Data: data}
	}
	return resp, nil
}

// itemBreak separates the text of two message items of one answer, in
// the whole text and among the streamed deltas alike.
const itemBreak = "\n\n"

// messageText is a message item's text; a refusal is the text when
// there is no other.
func messageText(it outputItem) string {
	var text, refusal strings.Builder
	for _, c := range it.Content {
		switch c.Type {
		case "output_text":
			text.WriteString(c.Text)
		case "refusal":
			refusal.WriteString(c.Refusal)
		}
	}
	if text.Len() == 0 {
		return refusal.String()
	}
	return text.String()
}

// noAnswer is the error for a response without text or calls: cut short
// before any (incomplete: the output limit spent on reasoning, or a
// content filter), or none at all. Asking again would most likely pay for
// the same.
func noAnswer(r *responseObject) error {
	id := ""
	if r.ID != "" {
		id = " (response " + r.ID + ")"
	}
	if r.Status == "incomplete" {
		reason := "no reason given"
		if r.IncompleteDetails != nil && r.IncompleteDetails.Reason != "" {
			reason = r.IncompleteDetails.Reason
		}
		hint := ""
		if reason == "max_output_tokens" {
			hint = "; the model spent its output tokens before answering: raise max tokens"
		}
		return retry.Permanent(fmt.Errorf("%s: the response is incomplete (%s) and holds no answer%s%s", ResponsesName, reason, id, hint))
	}
	return retry.Permanent(fmt.Errorf("%s: the server returned no text and no calls%s", ResponsesName, id))
}

// responseError is a failure the API reported in a response or a stream,
// as the status it stands for: a rate limit or a server error is retried
// as its status would be, anything else (a bad image, a prompt refused)
// is this request's and is not.
func responseError(what, code, msg string) error {
	status := 400
	switch {
	case strings.Contains(code, "rate_limit"):
		status = 429
	case code == "" || code == "server_error" || strings.HasSuffix(code, "_timeout"):
		status = 500
	}
	text := what
	if msg != "" {
		text += ": " + msg
	}
	if code != "" {
		text += " (" + code + ")"
	}
	return &retry.StatusError{Provider: ResponsesName, Status: status, Message: wire.Clip(text)}
}

func responsesUsageOf(u *responsesUsage) model.Usage {
	if u == nil {
		return model.Usage{}
	}
	out := model.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
	if d := u.InputTokensDetails; d != nil {
		out.CachedInputTokens, out.CacheWriteTokens = d.CachedTokens, d.CacheWriteTokens
	}
	if d := u.OutputTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	return out
}
