package gemini

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/outschema"
	"github.com/fsdrun/fsd/model/openai"
	"github.com/fsdrun/fsd/model/retry"
)

// ForeignSignature is sent as the thoughtSignature of a step's first call
// when the transcript holds none for it: calls another model made (a
// fallback chain), or a Gemini model that sent none. Gemini 3 refuses a
// step of the current turn whose first call comes back without a
// signature; this value, documented for history the model did not
// produce itself, tells it to skip that check.
const ForeignSignature = "skip_thought_signature_validator"

// EmptyInput is the user text of a request whose messages hold nothing
// to send (a run without input).
const EmptyInput = "Go on as the system instruction says."

// signatures is the model.State a Gemini answer leaves: the thought
// signatures its parts came with, which Gemini wants back exactly where
// they were — on a call (by its id) and on the text.
type signatures struct {
	Calls map[string]string `json:"calls,omitempty"`
	Text  string            `json:"text,omitempty"`
}

// buildRequest maps a model.Request to a generateContent request. (M5)
func buildRequest(cfg Config, req *model.Request) (*generateRequest, error) {
	p := &generateRequest{}
	self := Name + "/" + cfg.Model // whose state this model reads
	caps := capabilities(cfg.Model)
	// The current-context block is the system instruction; Gemma, which
	// takes none, reads it as the first user text instead.
	switch {
	case req.Context == "":
	case gemma(cfg.Model):
		p.Contents = append(p.Contents, content{Role: "user", Parts: []part{{Text: req.Context}}})
	default:
		p.SystemInstruction = &content{Parts: []part{{Text: req.Context}}}
	}
	names := map[string]string{} // call id -> tool name, for results without one
	for i, msg := range req.Messages {
		role, parts, err := message(msg, names, self, caps)
		if err != nil {
			return nil, fmt.Errorf("gemini: message %d: %w", i+1, err)
		}
		if len(parts) == 0 {
			continue
		}
		// Turns of one role in a row are one content: tool results and
		// the runtime's line after them are one user turn, as the API
		// wants the answers to one step's calls together.
		if n := len(p.Contents); n > 0 && p.Contents[n-1].Role == role {
			p.Contents[n-1].Parts = append(p.Contents[n-1].Parts, parts...)
			continue
		}
		p.Contents = append(p.Contents, content{Role: role, Parts: parts})
	}
	if len(p.Contents) == 0 {
		// Gemini refuses a request without contents, and an empty
		// input is no part: the model is asked to go by its instruction.
		p.Contents = []content{{Role: "user", Parts: []part{{Text: EmptyInput}}}}
	}
	if len(req.Tools) > 0 && caps.Tools {
		t := tool{}
		for _, d := range req.Tools {
			schema, err := openai.Schema(d.Parameters)
			if err != nil {
				return nil, fmt.Errorf("gemini: tool %s: %w", d.Name, err)
			}
			t.FunctionDeclarations = append(t.FunctionDeclarations, functionDeclaration{Name: d.Name, Description: d.Description, ParametersJSONSchema: schema})
		}
		p.Tools = []tool{t}
	}
	gc := &generationConfig{MaxOutputTokens: req.Bound(cfg.MaxTokens)}
	if req.Output != nil && caps.TypedOutput {
		if s, ok := outschema.Gemini(outschema.Decode(req.Output.Schema)); ok {
			gc.ResponseMIMEType, gc.ResponseJSONSchema = "application/json", s
		}
	}
	if gc.MaxOutputTokens > 0 || gc.ResponseMIMEType != "" {
		p.GenerationConfig = gc
	}
	return p, nil
}

// message maps one transcript message to a role and its parts, noting
// each call's tool name in names; an assistant message's parts carry the
// signatures of its state when self made it, and its media only the kinds
// caps take (the text says what they are for a model that takes none).
func message(msg model.Message, names map[string]string, self string, caps model.Capabilities) (string, []part, error) {
	switch msg.Role {
	case model.User, model.Context:
		// A context line is the runtime's note between turns or after a
		// step's results: user text is valid in both places.
		var parts []part
		// An empty text part is refused; a message of nothing is left out.
		if msg.Text != "" {
			parts = append(parts, part{Text: msg.Text})
		}
		return "user", append(parts, media(msg.Media, caps)...), nil
	case model.Tool:
		if msg.CallID == "" {
			return "", nil, fmt.Errorf("tool result without a call id")
		}
		name := msg.Name
		if name == "" {
			name = names[msg.CallID]
		}
		key := "output"
		if msg.IsError {
			key = "error"
		}
		fr := &functionResponse{ID: msg.CallID, Name: name, Response: map[string]any{key: msg.Text}}
		// Images and audio a tool answered follow its result in the
		// same user turn, which every Gemini model reads.
		return "user", append([]part{{FunctionResponse: fr}}, media(msg.Media, caps)...), nil
	case model.Assistant:
		var sig signatures
		if data := msg.State.For(self); data != nil {
			_ = json.Unmarshal(data, &sig) // another shape is no state of ours
		}
		var parts []part
		if msg.Text != "" {
			parts = append(parts, part{Text: msg.Text, ThoughtSignature: sig.Text})
		}
		signed := false
		for _, c := range msg.Calls {
			signed = signed || sig.Calls[c.ID] != ""
		}
		for i, c := range msg.Calls {
			names[c.ID] = c.Name
			p := part{FunctionCall: &functionCall{ID: c.ID, Name: c.Name, Args: args(c.Args)}, ThoughtSignature: sig.Calls[c.ID]}
			if i == 0 && !signed {
				p.ThoughtSignature = ForeignSignature
			}
			parts = append(parts, p)
		}
		return "model", parts, nil
	default:
		return "", nil, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// media maps the images and audio caps take to inline data parts.
func media(ms []model.Media, caps model.Capabilities) []part {
	var parts []part
	for _, m := range ms {
		if m.IsImage() && caps.Images || m.IsAudio() && caps.Audio {
			parts = append(parts, part{InlineData: &blob{MIMEType: m.MIME, Data: m.Data}})
		}
	}
	return parts
}

// args is a call's arguments as the API takes them: a JSON object. Others
// (another model's broken arguments, kept as a JSON string) are wrapped as
// {"value": …}, so the model still reads what was called.
func args(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0, string(raw) == "null":
		return nil
	case raw[0] == '{':
		return raw
	}
	b, _ := json.Marshal(map[string]json.RawMessage{"value": raw})
	return b
}

// parseResponse maps the first candidate back to a model.Response, its
// thought signatures as the response's state (whose model Generate
// names). A signed call that came without an id gets one made from its
// signature, so the state can name it. (M1)
func parseResponse(r *generateResponse) (*model.Response, error) {
	c, err := first(r)
	if err != nil {
		return nil, err
	}
	resp := &model.Response{Usage: usage(r.UsageMetadata), ID: r.ResponseID, Served: r.ModelVersion, FinishReason: c.FinishReason}
	var text []byte
	var sig signatures
	size := 0
	if c.Content != nil {
		for _, p := range c.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				fc := p.FunctionCall
				size += len(fc.Args)
				id := fc.ID
				if p.ThoughtSignature != "" {
					if id == "" {
						h := sha256.Sum256([]byte(p.ThoughtSignature))
						id = "sig_" + hex.EncodeToString(h[:8])
					}
					if sig.Calls == nil {
						sig.Calls = map[string]string{}
					}
					sig.Calls[id] = p.ThoughtSignature
				}
				resp.Calls = append(resp.Calls, model.ToolCall{ID: id, Name: fc.Name, Args: openai.Args(string(fc.Args))})
			case !p.Thought:
				text = append(text, p.Text...)
				size += len(p.Text)
				if p.ThoughtSignature != "" {
					sig.Text = p.ThoughtSignature
				}
			}
			if size > model.MaxResponseBytes {
				return nil, tooLarge()
			}
		}
	}
	resp.Text = string(text)
	if sig.Calls != nil || sig.Text != "" {
		data, _ := json.Marshal(sig)
		resp.State = &model.State{Data: data}
	}
	if resp.Text == "" && len(resp.Calls) == 0 {
		if err := withheld(c); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// first is a response's candidate 0, or why there is none.
func first(r *generateResponse) (*candidate, error) {
	for i := range r.Candidates {
		if r.Candidates[i].Index == 0 {
			return &r.Candidates[i], nil
		}
	}
	if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		// Asking again sends the same prompt.
		return nil, retry.Permanent(fmt.Errorf("gemini: the prompt was blocked (%s)", r.PromptFeedback.BlockReason))
	}
	if r.ResponseID != "" {
		return nil, fmt.Errorf("gemini: the server returned no candidates (response %s)", r.ResponseID)
	}
	return nil, fmt.Errorf("gemini: the server returned no candidates")
}

// withheld is the error for a candidate that ended without text or calls
// for a reason other than a natural stop or the token limit. A malformed
// function call is the model's slip, which another attempt usually
// mends; a filter's stop is not.
func withheld(c *candidate) error {
	switch c.FinishReason {
	case "", "STOP", "MAX_TOKENS", "FINISH_REASON_UNSPECIFIED":
		return nil
	case "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL":
		return &retry.StatusError{Provider: Name, Status: http.StatusInternalServerError,
			Message: "the model's function call was malformed (finish reason " + c.FinishReason + ")"}
	}
	msg := fmt.Sprintf("gemini: the answer was withheld (finish reason %s)", c.FinishReason)
	if c.FinishMessage != "" {
		msg += ": " + c.FinishMessage
	}
	return retry.Permanent(fmt.Errorf("%s", msg))
}

// usage maps usageMetadata: input is the whole prompt, cached tokens
// included; output is the candidates' tokens and the thoughts', both
// billed as output, the thoughts counted apart as reasoning tokens too. (M3)
func usage(u *usageMetadata) model.Usage {
	if u == nil {
		return model.Usage{}
	}
	return model.Usage{
		InputTokens:       u.PromptTokenCount + u.ToolUsePromptTokenCount,
		OutputTokens:      u.CandidatesTokenCount + u.ThoughtsTokenCount,
		CachedInputTokens: u.CachedContentTokenCount,
		ReasoningTokens:   u.ThoughtsTokenCount,
	}
}
