package openai

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/outschema"
)

// buildRequest maps a model.Request to a chat completion request.
func buildRequest(cfg Config, req *model.Request) (*chatRequest, error) {
	p := &chatRequest{Model: cfg.Model, MaxCompletionTokens: req.Bound(cfg.MaxTokens)}
	// The current-context block leads as a system message: "developer" is
	// OpenAI's newer name for it, but Ollama, vLLM and llama.cpp only know
	// "system", and OpenAI still accepts it.
	if req.Context != "" {
		p.Messages = append(p.Messages, chatMessage{Role: "system", Content: &req.Context})
	}
	var media []contentPart // of the tool results since the last other message
	for i, msg := range req.Messages {
		if msg.Role != model.Tool && len(media) > 0 {
			p.Messages = append(p.Messages, mediaMessage(media))
			media = nil
		}
		mp, err := message(msg)
		if err != nil {
			return nil, fmt.Errorf("openai: message %d: %w", i+1, err)
		}
		p.Messages = append(p.Messages, mp)
		if msg.Role == model.Tool {
			media = append(media, mediaParts(msg)...)
		}
	}
	if len(media) > 0 {
		p.Messages = append(p.Messages, mediaMessage(media))
	}
	for _, t := range req.Tools {
		schema, err := Schema(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("openai: tool %s: %w", t.Name, err)
		}
		p.Tools = append(p.Tools, chatTool{Type: "function", Function: functionDef{Name: t.Name, Description: t.Description, Parameters: schema}})
	}
	if req.OnText != nil {
		p.Stream = true
		p.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	p.ResponseFormat = responseFormatOf(req.Output)
	if req.Cache {
		// OpenAI caches prefixes on its own; the key keeps one
		// generator's requests on the same cache.
		p.PromptCacheKey = cacheKey(req.CacheKey)
	}
	return p, nil
}

// MaxCacheKey is the longest prompt_cache_key OpenAI accepts: a longer one
// fails the request (400, string_above_max_length).
const MaxCacheKey = 64

// cacheKey fits a key in MaxCacheKey bytes. A longer one (a model names
// tasks, so their ids have no bound) keeps its start, cut on a character
// boundary, and ends in a hash of the whole: stable, and distinct from
// other keys that start alike.
func cacheKey(k string) string {
	if len(k) <= MaxCacheKey {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	tail := "~" + hex.EncodeToString(sum[:8])
	cut := MaxCacheKey - len(tail)
	for cut > 0 && !utf8.RuneStart(k[cut]) {
		cut--
	}
	return k[:cut] + tail
}

func message(msg model.Message) (chatMessage, error) {
	text := msg.Text
	switch msg.Role {
	case model.User, model.Context:
		// A context line is the runtime's note between turns or after a
		// group's tool results: a user message is valid in both places.
		return chatMessage{Role: "user", Content: &text}, nil
	case model.Tool:
		if msg.CallID == "" {
			return chatMessage{}, fmt.Errorf("tool result without a call id")
		}
		// Chat Completions has no error flag on tool results: the text is
		// all the model sees, and fsd's tool errors already say they are.
		return chatMessage{Role: "tool", Content: &text, ToolCallID: msg.CallID}, nil
	case model.Assistant:
		a := chatMessage{Role: "assistant"}
		if msg.Text != "" || len(msg.Calls) == 0 {
			a.Content = &text
		}
		for _, c := range msg.Calls {
			args := string(c.Args)
			if args == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, chatToolCall{ID: c.ID, Type: "function", Function: chatFunction{Name: c.Name, Arguments: args}})
		}
		return a, nil
	default:
		return chatMessage{}, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// Schema decodes a tool's JSON Schema into the object sent as the
// function's parameters. An absent schema becomes an empty object schema:
// both APIs require one.
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
func parseCompletion(c *chatCompletion) (*model.Response, error) {
	if len(c.Choices) == 0 {
		return nil, errNoChoices(c.ID)
	}
	ch := c.Choices[0]
	for _, x := range c.Choices {
		if x.Index == 0 {
			ch = x
			break
		}
	}
	msg := ch.Message
	resp := &model.Response{Text: msg.Content, Usage: usage(c.Usage), ID: c.ID, Served: c.Model, FinishReason: ch.FinishReason}
	if resp.Text == "" && msg.Refusal != "" {
		resp.Text = msg.Refusal
	}
	size := len(resp.Text)
	for _, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom tools are never offered by fsd
		}
		size += len(tc.Function.Arguments)
		resp.Calls = append(resp.Calls, model.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: Args(tc.Function.Arguments)})
	}
	if size > model.MaxResponseBytes {
		return nil, tooLarge()
	}
	return resp, nil
}

func usage(u *chatUsage) model.Usage {
	if u == nil {
		return model.Usage{}
	}
	out := model.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if u.PromptTokensDetails != nil {
		out.CachedInputTokens = u.PromptTokensDetails.CachedTokens
	}
	return out
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

// errNoChoices is a completion without any choice: some compatible servers
// answer so on overload or a filtered prompt.
func errNoChoices(id string) error {
	if id == "" {
		return fmt.Errorf("openai: the server returned no choices")
	}
	return fmt.Errorf("openai: the server returned no choices (completion %s)", id)
}

// responseFormatOf passes an output schema on as response_format
// json_schema: strict (decoding follows the schema) when the schema fits
// strict mode's subset, else not strict (the schema guides the model).
// A schema whose root is not an object is not sent: the API wants an
// object there. fsd checks the answer in every case.
func responseFormatOf(out *model.Output) *responseFormat {
	if s := jsonSchemaOf(out); s != nil {
		return &responseFormat{Type: "json_schema", JSONSchema: s}
	}
	return nil
}

// jsonSchemaOf is the json_schema an output schema goes out as, in both
// APIs (the Responses API's text.format flattens it); nil when it is not
// sent.
func jsonSchemaOf(out *model.Output) *jsonSchemaSpec {
	if out == nil {
		return nil
	}
	s := outschema.Decode(out.Schema)
	if s == nil || s["type"] != "object" {
		return nil
	}
	return &jsonSchemaSpec{Name: schemaName(out.Name), Schema: s, Strict: outschema.Strict(s)}
}

// schemaName fits a name to json_schema.name: 1-64 of a-z, A-Z, 0-9, _
// and -.
func schemaName(name string) string {
	b := make([]byte, 0, len(name))
	for i := 0; i < len(name) && len(b) < 64; i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b = append(b, c)
		default:
			b = append(b, '_')
		}
	}
	if len(b) == 0 {
		return "output"
	}
	return string(b)
}

// mediaParts are a tool result's images and audio as content parts, after
// a line naming the call they came from. A tool message takes text only
// (ChatCompletionRequestToolMessageContentPart in OpenAI's OpenAPI
// document, 2.3.0), so they go in a user message after the group of
// results: tool messages must follow the assistant's calls unbroken.
//
// P2: a tool result's media follow the group of results.
func mediaParts(msg model.Message) []contentPart {
	var parts []contentPart
	for _, m := range msg.Media {
		data := base64.StdEncoding.EncodeToString(m.Data)
		switch format := audioFormat(m.MIME); {
		case m.IsImage():
			parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{URL: "data:" + m.MIME + ";base64," + data}})
		case format != "":
			parts = append(parts, contentPart{Type: "input_audio", InputAudio: &inputAudio{Data: data, Format: format}})
		}
	}
	if len(parts) == 0 {
		return nil
	}
	head := contentPart{Type: "text", Text: fmt.Sprintf("The result of call %s (%s) came with this media:", msg.CallID, msg.Name)}
	return append([]contentPart{head}, parts...)
}

// audioFormat is input_audio's format for a MIME type: wav or mp3, the two
// the API takes; "" for others.
func audioFormat(mime string) string {
	switch mime {
	case "audio/wav", "audio/x-wav", "audio/wave":
		return "wav"
	case "audio/mpeg", "audio/mp3":
		return "mp3"
	}
	return ""
}

func mediaMessage(parts []contentPart) chatMessage {
	return chatMessage{Role: "user", Parts: parts}
}
