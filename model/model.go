package model

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
)

// Role is who wrote a message.
type Role string

// The roles of transcript messages.
const (
	User      Role = "user"
	Assistant Role = "assistant"
	Tool      Role = "tool"
	// Context is a line from the runtime, not from a person: a skill was
	// loaded, became active again or was unloaded, and why (contextChanged
	// entries). It sits between turns and groups of tool calls, never
	// between a call and its result; providers send it as user-side text
	// (OpenAI: a user message; Anthropic: a text block of the user turn,
	// after any tool results).
	Context Role = "context"
)

// ToolCall is one call of a tool made by the model.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Message is one transcript message. A user or context message has Text; an assistant
// message has Text, Calls or both; a tool message answers exactly one call
// (CallID) with Text, and IsError when the tool failed.
type Message struct {
	Role    Role       `json:"role"`
	Text    string     `json:"text,omitempty"`
	Calls   []ToolCall `json:"calls,omitempty"`
	CallID  string     `json:"call_id,omitempty"`
	Name    string     `json:"name,omitempty"`
	IsError bool       `json:"error,omitempty"`
	// Artifact is set on the result of a reader tool: the id of the skill
	// whose artifact it read. Request assembly replaces such results with a
	// one-line stub once that skill is unloaded (H4); the transcript keeps
	// them whole.
	Artifact string `json:"artifact,omitempty"`
	// Spool is set on a tool result too large for the window: the handle
	// of the artifact holding its text. Text stays whole in the
	// transcript; requests carry a preview and the handle instead.
	Spool string `json:"spool,omitempty"`
	// Quotes is set on a context line whose last line quotes what a skill
	// added to the context (a load line's preview): "ID@REVISION". Request
	// assembly drops that quote once the catalog no longer holds the skill
	// at that revision, so a disabled or edited skill's old text does not
	// stay in the window; the transcript keeps it.
	Quotes string `json:"quotes,omitempty"`
	// Media are images or audio that go with a tool result (an MCP tool
	// answered an image) or a user message. A provider sends them only to
	// a model whose Capabilities say it accepts them; the text says what
	// they are for any model that does not.
	Media []Media `json:"media,omitempty"`
	// State is set on an assistant message: what the provider that
	// answered it needs back with it on later requests (see State).
	State *State `json:"state,omitempty"`
	// Volatile is set on the context message request assembly puts last
	// (never on a transcript's): state that changes from one request to
	// the next, such as the board's status. Providers keep it after their
	// last cache breakpoint, so a change of it leaves the cached prefix
	// as it was.
	Volatile bool `json:"volatile,omitempty"`
	// Model is set on an assistant message answered by another model than
	// the string its generator names: a fallback chain's model that
	// answered, or --model's. The journal keeps it, so a resumed
	// generator goes on with that model (Caller.Answered).
	Model string `json:"model,omitempty"`
}

// State is what a provider hands the client to keep with an answer and
// send back, unchanged, with that answer on every later request: the
// model's encrypted reasoning from OpenAI's Responses API, which keeps
// nothing itself under store: false. The transcript and the journal keep
// it on the assistant message, so the next step of a generator and a
// resumed run send it as the first run would have. It is opaque to
// everyone but the provider that made it.
type State struct {
	// Model is the model string that made it (openai-responses/gpt-5.4):
	// a provider sends back only its own model's state, so the next model
	// of a fallback chain gets none.
	Model string `json:"model"`
	// Data is the provider's own JSON.
	Data json.RawMessage `json:"data"`
}

// For returns s's data when s was made by the model string m, else
// nil.
func (s *State) For(m string) json.RawMessage {
	if s == nil || s.Model != m {
		return nil
	}
	return s.Data
}

// Media is one image or audio clip a message carries.
type Media struct {
	// MIME is the content type: image/png, image/jpeg, audio/wav, ...
	MIME string `json:"mime"`
	// Data is the raw bytes (base64 in JSON).
	Data []byte `json:"data"`
}

// IsImage and IsAudio tell the two kinds of media apart by MIME type.
func (m Media) IsImage() bool { return strings.HasPrefix(m.MIME, "image/") }
func (m Media) IsAudio() bool { return strings.HasPrefix(m.MIME, "audio/") }

// Capabilities say what a model accepts in a request. A provider's table
// fills them per model; the engine leaves out of a request what the model
// that will answer cannot take.
type Capabilities struct {
	Tools       bool `json:"tools"`
	Images      bool `json:"images"`
	Audio       bool `json:"audio"`
	TypedOutput bool `json:"typed_output"`
	Caching     bool `json:"caching"`
}

// Capable is a Model that says what it accepts.
type Capable interface {
	Capabilities() Capabilities
}

// CapabilitiesOf returns m's capabilities, or tools and typed output only
// (what every model fsd speaks to takes) when m does not say.
func CapabilitiesOf(m Model) Capabilities {
	if c, ok := m.(Capable); ok {
		return c.Capabilities()
	}
	return Capabilities{Tools: true, TypedOutput: true}
}

// Router is a Model that hands each request to a model its caller
// chooses (the CLI's, by Caller.Model): it says what the model that will
// answer c accepts.
type Router interface {
	CapabilitiesFor(c Caller) Capabilities
}

// CapabilitiesFor returns what the model answering c's requests accepts:
// a Router's answer for c, else CapabilitiesOf(m).
func CapabilitiesFor(m Model, c Caller) Capabilities {
	if r, ok := m.(Router); ok {
		return r.CapabilitiesFor(c)
	}
	return CapabilitiesOf(m)
}

// ToolDef is a tool offered to the model in one request.
type ToolDef struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is a JSON Schema object for the arguments.
	Parameters json.RawMessage `json:"parameters"`
}

// Caller says which generator is asking: the host or a board worker. The
// scripted model picks its script by it; real providers ignore it.
type Caller struct {
	Agent    string `json:"agent,omitempty"` // "" for the host
	TaskID   string `json:"task,omitempty"`
	TaskGoal string `json:"goal,omitempty"`
	Input    string `json:"input,omitempty"`
	// Step is the 0-based index of this model call within its generator.
	Step int `json:"step"`
	// Turn is the host's 1-based turn in a session (engine.Session), whose
	// turns each count steps from 0; 0 outside a session.
	Turn int `json:"turn,omitempty"`
	// Deps are the results of the task's dependencies by task id: a typed
	// result as its JSON value, a text result as a JSON string. The
	// scripted model's templates reach them as .Deps.ID.
	Deps map[string]json.RawMessage `json:"deps,omitempty"`
	// Model is the model string the workflow gives this generator — the
	// agent's `model:`, else the host's, else the workflow's — as the
	// engine resolves it from the manifests as they are now (a reload
	// changes it). "" when none names one: the Model decides. A Model
	// that serves several providers routes on it, as the CLI does.
	Model string `json:"model,omitempty"`
	// Answered is the model that answered this generator's last step when
	// the transcript records one (Message.Model), a resume included: a
	// fallback chain starts from it rather than from its first model, so
	// a generator that failed over stays on the model that answered and
	// its prompt cache.
	Answered string `json:"answered,omitempty"`
}

// ChainSep separates the models of a fallback chain in a model string:
// `model: [anthropic/x, openai/y]` is "anthropic/x,openai/y".
const ChainSep = ","

// Chain returns the model strings of s in the order they are tried: one
// for a plain model string.
func Chain(s string) []string {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ChainSep)
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// Request is everything one model call sees.
type Request struct {
	// Context is the current-context block: system prompt, catalog, loaded
	// skills, board status. Providers send it as the system message.
	Context  string    `json:"context"`
	Messages []Message `json:"messages"`
	Tools    []ToolDef `json:"tools,omitempty"`
	Caller   Caller    `json:"caller"`
	// Output, when set, is the JSON Schema the final answer must match
	// (the agent's `output:`). Providers with structured output pass it
	// on where the schema fits their rules; the engine checks the answer
	// whatever the provider did.
	Output *Output `json:"output,omitempty"`
	// OnText, when set, receives text deltas as a streaming provider
	// produces them. The response still carries the whole text.
	OnText func(delta string) `json:"-"`
	// OnReset, when set, is called when a streamed attempt that already
	// handed deltas to OnText failed and is retried: the text received so
	// far for this request is void, and the retry's deltas start over.
	OnReset func() `json:"-"`
	// Cache asks a provider to mark the request's stable prefix for its
	// prompt cache (Anthropic cache_control breakpoints); CacheKey groups
	// one generator's requests (OpenAI prompt_cache_key). Neither is part
	// of what a recording matches on.
	Cache    bool   `json:"-"`
	CacheKey string `json:"-"`
	// MaxTokens bounds this call's answer (0: the provider's configured
	// bound). The engine sets it where an output budget applies, so the
	// tokens it reserved for the answer are all the provider may bill;
	// providers send the smaller of it and their own (see Bound).
	MaxTokens int `json:"max_tokens,omitempty"`
}

// DefaultMaxTokens bounds an answer where nothing else does and a bound
// must be sent: Anthropic's max_tokens, which its API requires, and a call
// under an output budget, which reserves this many tokens for its answer.
const DefaultMaxTokens = 8192

// Bound is the bound on req's answer a provider configured with
// configured (0: none) sends: the smaller of the two that are set, 0 when
// neither is.
//
// B2: a request's bound is what the provider sends, when smaller.
func (req *Request) Bound(configured int) int {
	switch {
	case req.MaxTokens <= 0:
		return max(configured, 0)
	case configured <= 0:
		return req.MaxTokens
	}
	return min(req.MaxTokens, configured)
}

// Output is a typed result's schema as a request carries it.
type Output struct {
	// Name labels the schema for providers that want one (OpenAI's
	// json_schema.name): the agent's name, cut to their rules.
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
}

// MaxResponseBytes caps one model answer: its text and tool-call arguments
// together. A provider answering more fails the call rather than holding an
// unbounded answer in memory and in the run record.
const MaxResponseBytes = 8 << 20

// Usage counts the tokens a provider billed for one call. InputTokens is
// everything sent, cached or not; CachedInputTokens of it were read from
// the provider's prompt cache and CacheWriteTokens written to it.
type Usage struct {
	InputTokens       int `json:"input_tokens"`
	OutputTokens      int `json:"output_tokens"`
	CachedInputTokens int `json:"cached_input_tokens,omitempty"`
	CacheWriteTokens  int `json:"cache_write_tokens,omitempty"`
	// ReasoningTokens of OutputTokens were the model's hidden reasoning
	// (OpenAI's reasoning tokens): billed, and priced, as output.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// Estimated marks counts fsd made itself with the o200k_base
	// tokenizer because the model reported none (the scripted model, a
	// server that sends no usage). A sum is an estimate if any part is.
	Estimated bool `json:"estimated,omitempty"`
}

// IsZero reports whether u counts nothing: the model reported no usage.
func (u Usage) IsZero() bool { return u == Usage{} }

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
		CacheWriteTokens:  u.CacheWriteTokens + v.CacheWriteTokens,
		ReasoningTokens:   u.ReasoningTokens + v.ReasoningTokens,
		Estimated:         u.Estimated || v.Estimated,
	}
}

// Response is the model's answer to one request: final text, tool calls,
// or both.
type Response struct {
	Text  string     `json:"text,omitempty"`
	Calls []ToolCall `json:"calls,omitempty"`
	Usage Usage      `json:"usage"`
	// Model is the model string that answered, when a router knows it
	// (the CLI sets it; `--model` overrides the manifests' choice). The
	// engine prices the call by it, else by the request's Caller.Model.
	Model string `json:"model,omitempty"`
	// State is what the provider needs back with this answer on later
	// requests; it goes onto the assistant message the answer becomes.
	State *State `json:"state,omitempty"`
	// ID, Served and FinishReason are what the provider's answer says of
	// itself, when it does: its id (chatcmpl-…, msg_…), the exact model
	// that answered (a dated version of the requested one), and why it
	// stopped, in the provider's words (stop, tool_calls, end_turn, …).
	// Traces report them; nothing else depends on them.
	ID           string `json:"id,omitempty"`
	Served       string `json:"served,omitempty"`
	FinishReason string `json:"finish_reason,omitempty"`
	// Server is the host:port the request went to and MaxTokens the
	// bound on the answer it asked for (0: none), for traces.
	Server    string `json:"-"`
	MaxTokens int    `json:"-"`
}

// Model answers requests. Implementations must be safe for concurrent use:
// board workers call one model from many goroutines.
type Model interface {
	Generate(ctx context.Context, req *Request) (*Response, error)
}

// Func adapts a function to Model; tests use it as a double.
type Func func(ctx context.Context, req *Request) (*Response, error)

// Generate calls f.
func (f Func) Generate(ctx context.Context, req *Request) (*Response, error) { return f(ctx, req) }

// providerNames are the providers a model string may name before its
// slash, besides scripted: the file format's list, which spec checks
// manifests against. Package provider builds a model for each, and its
// tests keep its registry and this list the same.
var providerNames = []string{"openai", "openai-responses", "anthropic", "gemini"}

// ProviderNames returns the providers a model string may name, in the
// order messages list them (scripted is not among them).
func ProviderNames() []string { return slices.Clone(providerNames) }

// IsProvider reports whether p is one of ProviderNames.
func IsProvider(p string) bool { return slices.Contains(providerNames, p) }
