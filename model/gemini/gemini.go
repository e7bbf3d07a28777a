package gemini

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/wire"
	"github.com/fsdrun/fsd/model/retry"
)

// Name is the provider name used in errors and model strings.
const Name = "gemini"

// DefaultBaseURL is Google's Gemini API; APIVersion is joined to it.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/"

// APIVersion is the version of the API fsd speaks: v1beta is the one
// that has system instructions, function calling and JSON Schema output
// together, and the one Google's SDKs use.
const APIVersion = "v1beta"

// Config configures one model.
type Config struct {
	Model  string // e.g. gemini-2.5-flash
	APIKey string
	// KeyEnv names the variable the key comes from (or would), for the
	// error when the server refuses it; "" names none.
	KeyEnv string
	// BaseURL points at another server speaking the same API (a gateway);
	// "" means Google's. The API version and method are joined to it.
	BaseURL string
	// HTTPClient carries the requests; nil means a plain client (deadlines
	// come from the retry policy, not from the client).
	HTTPClient *http.Client
	// MaxTokens bounds each answer (maxOutputTokens); 0 leaves it to the
	// server.
	MaxTokens int
	Retry     retry.Policy
}

// Model calls one Gemini model. It is safe for concurrent use.
type Model struct {
	cfg    Config
	client *wire.Client
}

var (
	_ model.Model   = (*Model)(nil)
	_ model.Capable = (*Model)(nil)
)

// New builds a Model. It makes no request.
func New(cfg Config) (*Model, error) {
	// The model is a resource of the path: models/NAME, or a name that
	// says its collection (tunedModels/NAME).
	res := strings.TrimSpace(cfg.Model)
	if res != "" && !strings.Contains(res, "/") {
		res = "models/" + res
	}
	c, err := wire.NewClient(wire.Endpoint{
		Provider: Name, Model: cfg.Model, APIKey: cfg.APIKey, KeyEnv: cfg.KeyEnv,
		BaseURL: cfg.BaseURL, DefaultBaseURL: DefaultBaseURL,
		Path:       "/" + APIVersion + "/" + res + ":generateContent",
		StreamPath: "/" + APIVersion + "/" + res + ":streamGenerateContent?alt=sse",
		KeyHeader:  "X-Goog-Api-Key",
		HTTPClient: cfg.HTTPClient, Retry: cfg.Retry,
	}, wire.Format{Whole: wire.JSON(Name, parseResponse), Stream: stream})
	if err != nil {
		return nil, err
	}
	return &Model{cfg: cfg, client: c}, nil
}

// Generate sends one request, streaming when req.OnText is set. A streamed
// attempt that is retried after sending text calls req.OnReset first.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	body, err := buildRequest(m.cfg, req)
	if err != nil {
		return nil, err
	}
	resp, err := m.client.Generate(ctx, req, body)
	if resp != nil && resp.State != nil {
		// The signatures are this model's: another model reads none.
		resp.State.Model = Name + "/" + m.cfg.Model
	}
	return resp, err
}

// Capabilities are a Gemini model's: function calling, images and audio
// in (inline data), structured output, and implicit prompt caching, which
// needs nothing in the request. A Gemma model the API serves takes images
// only: no function declarations, no JSON output, no system instruction
// (Google's ADK, model Gemma, says the same and turns its tools into
// prompt text, which fsd does not).
func (m *Model) Capabilities() model.Capabilities { return capabilities(m.cfg.Model) }

// capabilities are the named model's; requests hold only what it takes.
func capabilities(name string) model.Capabilities {
	if gemma(name) {
		return model.Capabilities{Images: true}
	}
	return model.Capabilities{Tools: true, Images: true, Audio: true, TypedOutput: true, Caching: true}
}

// gemma reports whether name is one of Google's open Gemma models, which
// the Gemini API serves without its system instruction, tools or JSON
// output ("Developer instruction is not enabled for models/gemma-3-27b-it").
func gemma(name string) bool {
	return strings.HasPrefix(strings.TrimPrefix(name, "models/"), "gemma-")
}

// streamError is an error the server sent inside a stream after its 200.
// Its code is the status it stands for (429, 503), so the policy retries
// an overload and not a bad request; without one it is a server error.
func streamError(raw []byte) *retry.StatusError {
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	}
	_ = json.Unmarshal(raw, &e)
	status := e.Code
	if status < 400 {
		status = http.StatusInternalServerError
	}
	msg := e.Message
	if msg == "" {
		msg = string(raw)
	}
	return &retry.StatusError{Provider: Name, Status: status, Message: wire.Clip("error inside the stream: " + msg)}
}

func tooLarge() error { return wire.TooLarge(Name) }
