package gemini

import "encoding/json"

// The generateContent wire format (v1beta): only the fields fsd sends and
// reads. New request fields go here.

type generateRequest struct {
	Contents          []content         `json:"contents"`
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	Tools             []tool            `json:"tools,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

// content is one turn: role "user" or "model" (none for the system
// instruction), and its parts.
type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

// part holds exactly one of text, inlineData, functionCall or
// functionResponse. ThoughtSignature goes beside a functionCall: Gemini 3
// refuses a request whose calls come back without theirs.
type part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	InlineData       *blob             `json:"inlineData,omitempty"`
	FunctionCall     *functionCall     `json:"functionCall,omitempty"`
	FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
}

// blob is inline media; Data is base64 (encoding/json's []byte).
type blob struct {
	MIMEType string `json:"mimeType"`
	Data     []byte `json:"data"`
}

type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// functionResponse answers one call: Response is {"output": …} or
// {"error": …}, the keys the API reads as a result and a failure.
type functionResponse struct {
	ID       string         `json:"id,omitempty"`
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type tool struct {
	FunctionDeclarations []functionDeclaration `json:"functionDeclarations"`
}

// functionDeclaration carries its parameters as JSON Schema
// (parametersJsonSchema) rather than the OpenAPI subset of "parameters":
// a tool's schema is sent as the tool wrote it, as for the other
// providers.
type functionDeclaration struct {
	Name                 string         `json:"name"`
	Description          string         `json:"description,omitempty"`
	ParametersJSONSchema map[string]any `json:"parametersJsonSchema"`
}

type generationConfig struct {
	MaxOutputTokens int `json:"maxOutputTokens,omitempty"`
	// ResponseMIMEType "application/json" with ResponseJSONSchema asks
	// for a final answer in the agent's output schema.
	ResponseMIMEType   string         `json:"responseMimeType,omitempty"`
	ResponseJSONSchema map[string]any `json:"responseJsonSchema,omitempty"`
}

// generateResponse is a whole answer, or one chunk of a streamed one
// (each chunk has the same shape and carries what is new).
type generateResponse struct {
	Candidates     []candidate     `json:"candidates"`
	PromptFeedback *promptFeedback `json:"promptFeedback"`
	UsageMetadata  *usageMetadata  `json:"usageMetadata"`
	ResponseID     string          `json:"responseId"`
	ModelVersion   string          `json:"modelVersion"`
	// Error is set by a server that reports a failure inside a stream.
	Error json.RawMessage `json:"error"`
}

type candidate struct {
	Content       *content `json:"content"`
	FinishReason  string   `json:"finishReason"`
	FinishMessage string   `json:"finishMessage"`
	Index         int      `json:"index"`
}

type promptFeedback struct {
	BlockReason string `json:"blockReason"`
}

// usageMetadata counts tokens. promptTokenCount includes the cached
// tokens; thoughts are billed as output beside the candidates' tokens.
type usageMetadata struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int `json:"toolUsePromptTokenCount"`
}
