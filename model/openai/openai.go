package openai

import (
	"context"
	"net/http"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/wire"
	"github.com/fsdrun/fsd/model/retry"
)

// Name is the provider name used in errors and model strings.
const Name = "openai"

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1/"

// Config configures one model.
type Config struct {
	Model  string // e.g. gpt-5.4-mini, or llama3.2 on Ollama
	APIKey string
	// KeyEnv names the variable the key comes from (or would), for the
	// error when the server refuses it; "" names none.
	KeyEnv string
	// BaseURL points at any OpenAI-compatible server; "" means OpenAI.
	BaseURL string
	// HTTPClient carries the requests; nil means a plain client (deadlines
	// come from the retry policy, not from the client).
	HTTPClient *http.Client
	// MaxTokens bounds each completion (max_completion_tokens); 0 leaves
	// it to the server.
	MaxTokens int
	Retry     retry.Policy
}

// Model calls one chat model. It is safe for concurrent use.
type Model struct {
	cfg    Config
	client *wire.Client
}

var _ model.Model = (*Model)(nil)

// New builds a Model. It makes no request.
func New(cfg Config) (*Model, error) {
	c, err := wire.NewClient(wire.Endpoint{
		Provider: Name, Model: cfg.Model, APIKey: cfg.APIKey, KeyEnv: cfg.KeyEnv,
		BaseURL: cfg.BaseURL, DefaultBaseURL: DefaultBaseURL, Path: "/chat/completions",
		KeyHeader: "Authorization", KeyPrefix: "Bearer ",
		HTTPClient: cfg.HTTPClient, Retry: cfg.Retry, MaxTokens: cfg.MaxTokens,
	}, wire.Format{Whole: wire.JSON(Name, parseCompletion), Stream: stream})
	if err != nil {
		return nil, err
	}
	return &Model{cfg: cfg, client: c}, nil
}

// Generate sends one request, streaming when req.OnText is set. A streamed
// attempt that is retried after sending text calls req.OnReset first.
//
// What the model does not take (Capabilities) is left out first: images
// it cannot see become a note in their message's text (M23).
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	req = model.Fit(req, m.Capabilities())
	body, err := buildRequest(m.cfg, req)
	if err != nil {
		return nil, err
	}
	return m.client.Generate(ctx, req, body)
}
