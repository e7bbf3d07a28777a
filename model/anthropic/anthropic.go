package anthropic

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/redact"
	"github.com/fsdrun/fsd/model/internal/wire"
	"github.com/fsdrun/fsd/model/retry"
)

// Name is the provider name used in errors and model strings.
const Name = "anthropic"

// DefaultBaseURL is Anthropic's API.
const DefaultBaseURL = "https://api.anthropic.com/"

// DefaultMaxTokens is sent as max_tokens, which the Messages API requires.
const DefaultMaxTokens = 8192

// APIVersion is the anthropic-version header sent with every request.
const APIVersion = "2023-06-01"

// Config configures one model.
type Config struct {
	Model  string // e.g. claude-sonnet-4-5
	APIKey string
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
	cfg     Config
	url     string
	client  *http.Client
	secrets redact.Secrets
}

var _ model.Model = (*Model)(nil)

// New builds a Model. It makes no request.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("anthropic: no model name")
	}
	if cfg.APIKey == "" && cfg.BaseURL == "" {
		// Only a server of one's own may go without a key.
		return nil, errors.New("anthropic: no API key")
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	return &Model{
		cfg:     cfg,
		url:     strings.TrimRight(base, "/") + "/v1/messages",
		client:  hc,
		secrets: redact.New(cfg.APIKey),
	}, nil
}

// Generate sends one request, streaming when req.OnText is set. A streamed
// attempt that is retried after sending text calls req.OnReset first.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	body, err := buildRequest(m.cfg, req)
	if err != nil {
		return nil, err
	}
	var resp *model.Response
	sent := false // an attempt handed text to OnText
	err = retry.Do(ctx, m.cfg.Retry, Name, func(ctx context.Context) error {
		var err error
		if req.OnText != nil {
			if sent && req.OnReset != nil {
				req.OnReset()
			}
			sent = false
			resp, err = m.stream(ctx, body, func(d string) { sent = true; req.OnText(d) })
		} else {
			resp, err = m.complete(ctx, body)
		}
		return err
	})
	if err != nil {
		return nil, m.secrets.Error(err)
	}
	return resp, nil
}

func (m *Model) post(ctx context.Context, body *messagesRequest) (*http.Response, error) {
	h := http.Header{}
	if m.cfg.APIKey != "" {
		h.Set("X-Api-Key", m.cfg.APIKey)
	}
	h.Set("Anthropic-Version", APIVersion)
	if body.Stream {
		h.Set("Accept", "text/event-stream")
	}
	return wire.Post(ctx, m.client, wire.Request{
		Provider: Name, URL: m.url, Header: h, Body: body,
		Secrets: m.secrets,
	})
}

func (m *Model) complete(ctx context.Context, body *messagesRequest) (*model.Response, error) {
	r, err := m.post(ctx, body)
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	var msg message
	if err := wire.ReadJSON(Name, r.Body, &msg); err != nil {
		return nil, err
	}
	return parseMessage(&msg)
}

// streamError is an error event sent inside a stream after a 200 (an
// overload mid-answer). The status its type stands for is used, so the
// policy retries an overload and not a bad request.
func (m *Model) streamError(raw []byte) *retry.StatusError {
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
	return &retry.StatusError{Provider: Name, Status: status, Message: m.secrets.String(wire.Clip(msg))}
}
