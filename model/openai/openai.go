package openai

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
const Name = "openai"

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1/"

// Config configures one model.
type Config struct {
	Model  string // e.g. gpt-5.4-mini, or llama3.2 on Ollama
	APIKey string
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
	cfg     Config
	url     string
	client  *http.Client
	secrets redact.Secrets
}

var _ model.Model = (*Model)(nil)

// New builds a Model. It makes no request.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai: no model name")
	}
	if cfg.APIKey == "" && cfg.BaseURL == "" {
		// Only a server of one's own may go without a key.
		return nil, errors.New("openai: no API key")
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
		url:     strings.TrimRight(base, "/") + "/chat/completions",
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

func (m *Model) post(ctx context.Context, body *chatRequest) (*http.Response, error) {
	h := http.Header{}
	if m.cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+m.cfg.APIKey)
	}
	if body.Stream {
		h.Set("Accept", "text/event-stream")
	}
	return wire.Post(ctx, m.client, wire.Request{
		Provider: Name, URL: m.url, Header: h, Body: body,
		Secrets: m.secrets,
	})
}

func (m *Model) complete(ctx context.Context, body *chatRequest) (*model.Response, error) {
	r, err := m.post(ctx, body)
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	var c chatCompletion
	if err := wire.ReadJSON(Name, r.Body, &c); err != nil {
		return nil, err
	}
	return parseCompletion(&c)
}
