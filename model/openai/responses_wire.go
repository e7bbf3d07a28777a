package openai

import "encoding/json"

// The Responses API wire format (POST /responses): only the fields fsd
// sends and reads, from OpenAI's OpenAPI document 2.3.0
// (github.com/openai/openai-openapi, openapi.yaml: CreateResponse,
// Response, ResponseStreamEvent). New request fields go here.

type responsesRequest struct {
	Model string `json:"model"`
	// Instructions carries the current-context block: the API puts it
	// before the input, where the cached prefix starts.
	Instructions    string         `json:"instructions,omitempty"`
	Input           []any          `json:"input"` // inputMessage, functionCall, functionOutput, reasoning items
	Tools           []functionTool `json:"tools,omitempty"`
	MaxOutputTokens int            `json:"max_output_tokens,omitempty"`
	Stream          bool           `json:"stream,omitempty"`
	// Store is always false: the journal, not OpenAI, keeps the
	// conversation, and no request names a previous response.
	Store bool `json:"store"`
	// Include asks for reasoning.encrypted_content, which the next
	// request sends back (Store being false, the server keeps none).
	Include        []string   `json:"include,omitempty"`
	PromptCacheKey string     `json:"prompt_cache_key,omitempty"`
	Text           *textParam `json:"text,omitempty"`
}

// inputMessage is a message of the input (EasyInputMessage): Content is
// a string, or a list of inputText and inputImage parts.
type inputMessage struct {
	Type    string `json:"type"` // "message"
	Role    string `json:"role"` // user, assistant
	Content any    `json:"content"`
}

type inputText struct {
	Type string `json:"type"` // "input_text"
	Text string `json:"text"`
}

type inputImage struct {
	Type     string `json:"type"` // "input_image"
	ImageURL string `json:"image_url"`
	Detail   string `json:"detail"` // "auto"
}

// functionCall is an assistant's call as the input replays it.
type functionCall struct {
	Type      string `json:"type"` // "function_call"
	ID        string `json:"id,omitempty"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// functionOutput answers one call: Output is a string, or a list of
// inputText and inputImage parts when the result carries images.
type functionOutput struct {
	Type   string `json:"type"` // "function_call_output"
	CallID string `json:"call_id"`
	Output any    `json:"output"`
}

type functionTool struct {
	Type        string         `json:"type"` // "function"
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
	// Strict is always sent: the API requires the key and would decode
	// under strict mode without it. fsd checks arguments itself, as
	// with Chat Completions.
	Strict bool `json:"strict"`
}

type textParam struct {
	Format *textFormat `json:"format"`
}

// textFormat is text.format json_schema: Chat Completions'
// response_format.json_schema, flattened.
type textFormat struct {
	Type   string         `json:"type"` // "json_schema"
	Name   string         `json:"name"`
	Schema map[string]any `json:"schema"`
	Strict bool           `json:"strict"`
}

// responseObject is a Response, whole or in a stream's terminal event.
type responseObject struct {
	ID     string `json:"id"`
	Model  string `json:"model"`
	Status string `json:"status"` // completed, incomplete, failed, ...
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"` // max_output_tokens, content_filter
	} `json:"incomplete_details"`
	Output []json.RawMessage `json:"output"`
	Usage  *responsesUsage   `json:"usage"`
}

// outputItem is the part of an output item fsd reads: a message, a
// function call, or a reasoning item (kept whole, see reasoningItem).
type outputItem struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Content []struct {
		Type    string `json:"type"` // output_text, refusal
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
	CallID           string `json:"call_id"`
	Name             string `json:"name"`
	Arguments        string `json:"arguments"`
	EncryptedContent string `json:"encrypted_content"`
}

// keptItem is one output item of an answer as its State keeps it, in
// the answer's order: a reasoning item with its id and encrypted content,
// or the place of a message or a function call with its id. The text and
// calls themselves are on the assistant message (masked there); the next
// request rebuilds the items in order with their ids, as the API returned
// them, since it pairs a reasoning item with the item that follows it.
// A reasoning item's summary (fsd asks for none) and any readable text
// are not kept: fsd shows neither, and keeps no model text unmasked.
type keptItem struct {
	Type             string    `json:"type"` // reasoning, message, function_call
	ID               string    `json:"id,omitempty"`
	Summary          *[]string `json:"summary,omitempty"` // reasoning: always empty
	EncryptedContent string    `json:"encrypted_content,omitempty"`
	CallID           string    `json:"call_id,omitempty"`
}

// outputMessage is an assistant message of the input in the form the API
// returned it, with its id (OutputMessage).
type outputMessage struct {
	Type    string       `json:"type"` // "message"
	ID      string       `json:"id"`
	Role    string       `json:"role"`   // "assistant"
	Status  string       `json:"status"` // "completed"
	Content []outputText `json:"content"`
}

type outputText struct {
	Type        string `json:"type"` // "output_text"
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

type responsesUsage struct {
	InputTokens        int `json:"input_tokens"`
	OutputTokens       int `json:"output_tokens"`
	InputTokensDetails *struct {
		CachedTokens     int `json:"cached_tokens"`
		CacheWriteTokens int `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// streamEvent is one event of a streamed response, by its type: text and
// argument deltas, an output item done, the terminal response
// (completed, incomplete, failed), or an error.
type streamEvent struct {
	Type        string          `json:"type"`
	OutputIndex int             `json:"output_index"`
	Delta       string          `json:"delta"`
	Item        json.RawMessage `json:"item"`
	Response    *responseObject `json:"response"`
	// An error event's code and message (some servers nest them in
	// error).
	Code    any             `json:"code"`
	Message string          `json:"message"`
	Error   json.RawMessage `json:"error"`
}
