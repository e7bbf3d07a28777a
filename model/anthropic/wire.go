package anthropic

import "encoding/json"

// The Messages API wire format: only the fields fsd sends and reads. New
// request fields (cache_control, output formats, …) go here.

type messagesRequest struct {
	Model     string      `json:"model"`
	MaxTokens int         `json:"max_tokens"`
	System    []textBlock `json:"system,omitempty"`
	Messages  []msgParam  `json:"messages"`
	Tools     []toolParam `json:"tools,omitempty"`
	Stream    bool        `json:"stream,omitempty"`
	// OutputConfig asks for a final answer in the agent's output schema
	// (structured outputs, output_config.format).
	OutputConfig *outputConfig `json:"output_config,omitempty"`
}

type outputConfig struct {
	Format *outputFormat `json:"format,omitempty"`
}

type outputFormat struct {
	Type   string         `json:"type"` // "json_schema"
	Schema map[string]any `json:"schema"`
}

type textBlock struct {
	Type         string        `json:"type"` // "text"
	Text         string        `json:"text"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

// cacheControl marks the end of a prefix for the prompt cache.
type cacheControl struct {
	Type string `json:"type"` // "ephemeral"
}

var ephemeral = &cacheControl{Type: "ephemeral"}

type msgParam struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is one content block of a request message: text, tool_use or
// tool_result.
type block struct {
	Type string `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID    string        `json:"tool_use_id,omitempty"`
	Content      []resultPart  `json:"content,omitempty"`
	IsError      bool          `json:"is_error,omitempty"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

// resultPart is one part of a tool_result's content: text, or an image
// (source: base64 data and its media type).
type resultPart struct {
	Type   string       `json:"type"` // "text", "image"
	Text   string       `json:"text,omitempty"`
	Source *imageSource `json:"source,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type toolParam struct {
	Name         string         `json:"name"`
	Description  string         `json:"description,omitempty"`
	InputSchema  map[string]any `json:"input_schema"`
	CacheControl *cacheControl  `json:"cache_control,omitempty"`
}

// message is an answer, whole or as assembled from a stream.
type message struct {
	ID         string         `json:"id"`
	Model      string         `json:"model"`
	Content    []contentBlock `json:"content"`
	StopReason string         `json:"stop_reason"`
	Usage      msgUsage       `json:"usage"`
}

type contentBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type msgUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// streamEvent is one event of a streamed answer; fields not of its type
// are empty.
type streamEvent struct {
	Type         string        `json:"type"`
	Message      *message      `json:"message"`
	Index        int           `json:"index"`
	ContentBlock *contentBlock `json:"content_block"`
	Delta        struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *msgUsage `json:"usage"`
}
