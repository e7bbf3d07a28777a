package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/redact"
	"github.com/fsdrun/fsd/model/retry"
)

// Name is the provider name used in errors and model strings.
const Name = "anthropic"

// DefaultBaseURL is Anthropic's API.
const DefaultBaseURL = "https://api.anthropic.com/"

// DefaultMaxTokens is sent as max_tokens, which the Messages API requires.
const DefaultMaxTokens = 8192

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
	client  sdk.Client
	secrets redact.Secrets
}

var _ model.Model = (*Model)(nil)

// New builds a Model. It makes no request.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("anthropic: no model name")
	}
	if cfg.APIKey == "" {
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
	// No environment defaults: the caller's getenv decides, not os.Getenv
	// (the SDK would otherwise also pick up ANTHROPIC_AUTH_TOKEN and
	// config files).
	client := sdk.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
		option.WithBaseURL(base),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0), // model/retry owns retries
	)
	return &Model{cfg: cfg, client: client, secrets: redact.New(cfg.APIKey)}, nil
}

// Generate sends one request, streaming when req.OnText is set.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	params, err := buildParams(m.cfg, req)
	if err != nil {
		return nil, err
	}
	var resp *model.Response
	err = retry.Do(ctx, m.cfg.Retry, Name, func(ctx context.Context) error {
		var err error
		if req.OnText != nil {
			resp, err = m.stream(ctx, params, req.OnText)
		} else {
			resp, err = m.complete(ctx, params)
		}
		return m.translate(err)
	})
	if err != nil {
		return nil, m.secrets.Error(err)
	}
	return resp, nil
}

func (m *Model) complete(ctx context.Context, params sdk.MessageNewParams) (*model.Response, error) {
	msg, err := m.client.Messages.New(ctx, params)
	if err != nil {
		return nil, err
	}
	return parseMessage(msg), nil
}

func (m *Model) stream(ctx context.Context, params sdk.MessageNewParams, onText func(string)) (*model.Response, error) {
	s := m.client.Messages.NewStreaming(ctx, params)
	defer s.Close()
	var msg sdk.Message
	started := false
	for s.Next() {
		ev := s.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, retry.Permanent(fmt.Errorf("anthropic: malformed stream: %w", err))
		}
		if ev.Type == "message_start" {
			started = true
		}
		if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
			onText(ev.Delta.Text)
		}
	}
	if err := s.Err(); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, retry.Permanent(fmt.Errorf("anthropic: a stream event is not valid JSON: %w", err))
		}
		return nil, err
	}
	if !started {
		return nil, retry.Permanent(errors.New("anthropic: the stream ended without a message"))
	}
	return parseMessage(&msg), nil
}

// streamError is an error event sent inside a stream after a 200 (an
// overload mid-answer). The SDK reports it with the stream's status, 200;
// the status its type stands for is used instead, so the policy retries an
// overload and not a bad request.
func streamError(raw string) *retry.StatusError {
	typ, msg := errorBody(raw)
	status := http.StatusInternalServerError
	switch typ {
	case "overloaded_error":
		status = 529
	case "rate_limit_error":
		status = http.StatusTooManyRequests
	case "invalid_request_error":
		status = http.StatusBadRequest
	}
	return &retry.StatusError{Provider: Name, Status: status, Message: clip(msg)}
}

// translate turns the SDK's API error into a retry.StatusError carrying the
// provider's own message; other errors pass through.
func (m *Model) translate(err error) error {
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) {
		if err != nil && strings.Contains(err.Error(), "error parsing response json") {
			return retry.Permanent(fmt.Errorf("anthropic: the server's answer is not valid JSON: %w", err))
		}
		return err
	}
	if apiErr.StatusCode < 400 {
		se := streamError(apiErr.RawJSON())
		se.Message = m.secrets.String(se.Message)
		return se
	}
	_, msg := errorBody(apiErr.RawJSON())
	se := &retry.StatusError{Provider: Name, Status: apiErr.StatusCode, Message: m.secrets.String(clip(msg))}
	if apiErr.Response != nil {
		se.RetryAfter = retry.ParseRetryAfter(apiErr.Response.Header, time.Now())
	}
	return se
}

// errorBody reads Anthropic's error envelope
// {"type":"error","error":{"type":"…","message":"…"}}; a body in any other
// shape is returned whole as the message.
func errorBody(raw string) (typ, msg string) {
	var env struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &env) == nil && env.Error.Message != "" {
		return env.Error.Type, env.Error.Message
	}
	return "", strings.TrimSpace(raw)
}

// clip keeps an error message to one readable line.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 300 {
		return string(r[:300]) + "…"
	}
	return s
}
