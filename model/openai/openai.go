package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/redact"
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
	client  oai.Client
	secrets redact.Secrets
}

var _ model.Model = (*Model)(nil)

// New builds a Model. It makes no request.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai: no model name")
	}
	if cfg.APIKey == "" {
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
	// Every option the SDK would read from the process environment is set
	// explicitly, so the caller's getenv decides, not os.Getenv.
	client := oai.NewClient(
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

func (m *Model) complete(ctx context.Context, params oai.ChatCompletionNewParams) (*model.Response, error) {
	c, err := m.client.Chat.Completions.New(ctx, params)
	if err != nil {
		return nil, err
	}
	return parseCompletion(c)
}

// translate turns the SDK's API error into a retry.StatusError carrying the
// provider's own message; other errors pass through.
func (m *Model) translate(err error) error {
	var apiErr *oai.Error
	if !errors.As(err, &apiErr) {
		// The SDK reports a body it cannot decode by this prefix only.
		if err != nil && strings.Contains(err.Error(), "error parsing response json") {
			return retry.Permanent(fmt.Errorf("openai: the server's answer is not valid JSON: %w", err))
		}
		return err
	}
	msg := apiErr.Message
	if msg == "" {
		msg = strings.TrimSpace(apiErr.RawJSON())
	}
	se := &retry.StatusError{Provider: Name, Status: apiErr.StatusCode, Message: m.secrets.String(clip(msg))}
	if apiErr.Response != nil {
		se.RetryAfter = retry.ParseRetryAfter(apiErr.Response.Header, time.Now())
	}
	return se
}

// clip keeps an error message to one readable line.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 300 {
		return string(r[:300]) + "…"
	}
	return s
}

// errNoChoices is a completion without any choice: some compatible servers
// answer so on overload or a filtered prompt.
func errNoChoices(id string) error {
	if id == "" {
		return fmt.Errorf("openai: the server returned no choices")
	}
	return fmt.Errorf("openai: the server returned no choices (completion %s)", id)
}
