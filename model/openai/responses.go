package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/wire"
	"github.com/fsdrun/fsd/model/retry"
)

// ResponsesName is the Responses API's provider name in model strings
// (openai-responses/gpt-5.4) and errors.
const ResponsesName = "openai-responses"

// Responses calls one model through OpenAI's Responses API. It is safe for
// concurrent use.
type Responses struct {
	cfg    Config
	client *wire.Client
}

var (
	_ model.Model   = (*Responses)(nil)
	_ model.Capable = (*Responses)(nil)
)

// NewResponses builds a Responses model from the same configuration as
// New (key, base URL, max tokens, retries). It makes no request.
func NewResponses(cfg Config) (*Responses, error) {
	own := ResponsesName + "/" + cfg.Model
	c, err := wire.NewClient(wire.Endpoint{
		Provider: ResponsesName, Model: cfg.Model, APIKey: cfg.APIKey, KeyEnv: cfg.KeyEnv,
		BaseURL: cfg.BaseURL, DefaultBaseURL: DefaultBaseURL, Path: "/responses",
		KeyHeader: "Authorization", KeyPrefix: "Bearer ",
		HTTPClient: cfg.HTTPClient, Retry: cfg.Retry,
	}, wire.Format{
		Whole: wire.JSON(ResponsesName, func(r *responseObject) (*model.Response, error) { return answer(r, own) }),
		Stream: func(events *wire.SSE, onText func(string)) (*model.Response, error) {
			return streamResponse(events, onText, own)
		},
	})
	if err != nil {
		return nil, err
	}
	return &Responses{cfg: cfg, client: c}, nil
}

// Generate sends one request, streaming when req.OnText is set. A streamed
// attempt that is retried after sending text calls req.OnReset first.
//
// What the model does not take (Capabilities) is left out first, as for
// Chat Completions (M23).
func (m *Responses) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	req = model.Fit(req, m.Capabilities())
	body, err := buildResponsesRequest(m.cfg, req)
	if err != nil {
		return nil, err
	}
	resp, err := m.client.Generate(ctx, req, body)
	var se *retry.StatusError
	if errors.As(err, &se) && se.Status == http.StatusBadRequest && len(body.Include) > 0 &&
		strings.Contains(strings.ToLower(se.Message), "encrypted content") {
		// A model the table takes to reason that does not: Chat
		// Completions serves it without asking for reasoning.
		return nil, fmt.Errorf("%w; the model does not reason: use %s/%s", err, Name, m.cfg.Model)
	}
	return resp, err
}

// Capabilities are those of OpenAI's table (CapabilitiesFor), but for
// audio: the Responses API takes none in input.
func (m *Responses) Capabilities() model.Capabilities { return responsesCapabilities(m.cfg.Model) }

func responsesCapabilities(name string) model.Capabilities {
	c := CapabilitiesFor(strings.TrimPrefix(name, "ft:")) // a fine-tuned model: ft:gpt-4.1-mini:org::id
	c.Audio = false
	return c
}

// reasons reports whether a model reasons, and so is asked for its
// reasoning items: OpenAI refuses the include for a model that does not
// ("Encrypted content is not supported with this model"). The families
// before reasoning are told by name; any other model is taken to reason.
func reasons(name string) bool {
	name = strings.TrimPrefix(name, "ft:")
	return !hasPrefix(name, "gpt-4", "gpt-3.5", "chatgpt-")
}

func hasPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
