package anthropic

import (
	"context"
	"net/http"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/wire"
	"github.com/fsdrun/fsd/model/retry"
)

// Name is the provider name used in errors and model strings.
const Name = "anthropic"

// DefaultBaseURL is Anthropic's API.
const DefaultBaseURL = "https://api.anthropic.com/"

// DefaultMaxTokens is sent as max_tokens, which the Messages API requires.
const DefaultMaxTokens = model.DefaultMaxTokens

// APIVersion is the anthropic-version header sent with every request.
const APIVersion = "2023-06-01"

// Config configures one model.
type Config struct {
	Model  string // e.g. claude-sonnet-4-5
	APIKey string
	// KeyEnv names the variable the key comes from (or would), for the
	// error when the server refuses it; "" names none.
	KeyEnv string
	// BaseURL points at another Messages-API server; "" means Anthropic.
	BaseURL string
	// HTTPClient carries the requests; nil means a plain client (deadlines
	// come from the retry policy, not from the client).
	HTTPClient *http.Client
	// MaxTokens bounds each answer; 0 means DefaultMaxTokens.
	MaxTokens int
	Retry     retry.Policy
}

// Model calls one Claude model. It is safe for concurrent use.
type Model struct {
	cfg    Config
	client *wire.Client
}

var _ model.Model = (*Model)(nil)

// New builds a Model. It makes no request.
func New(cfg Config) (*Model, error) {
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	c, err := wire.NewClient(wire.Endpoint{
		Provider: Name, Model: cfg.Model, APIKey: cfg.APIKey, KeyEnv: cfg.KeyEnv,
		BaseURL: cfg.BaseURL, DefaultBaseURL: DefaultBaseURL, Path: "/v1/messages",
		KeyHeader:  "X-Api-Key",
		Header:     http.Header{"Anthropic-Version": {APIVersion}},
		HTTPClient: cfg.HTTPClient, Retry: cfg.Retry, MaxTokens: cfg.MaxTokens,
	}, wire.Format{Whole: wire.JSON(Name, parseWhole), Stream: stream})
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

// streamError is an error event sent inside a stream after a 200 (an
// overload mid-answer). The status its type stands for is used, so the
// policy retries an overload and not a bad request.
func streamError(raw []byte) *retry.StatusError {
	typ, msg := wire.ErrorEnvelope(raw)
	if msg == "" {
		msg = string(raw)
	}
	status := http.StatusInternalServerError
	switch typ {
	case "overloaded_error":
		status = 529
	case "rate_limit_error":
		status = http.StatusTooManyRequests
	case "invalid_request_error":
		status = http.StatusBadRequest
	}
	return &retry.StatusError{Provider: Name, Status: status, Message: wire.Clip(msg)}
}
