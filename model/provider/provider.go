package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/anthropic"
	"github.com/fsdrun/fsd/model/gemini"
	"github.com/fsdrun/fsd/model/openai"
	"github.com/fsdrun/fsd/model/retry"
)

// ErrScripted is returned by New for the model string "scripted" when
// Options.Scripted is nil: the caller builds the scripted model itself.
var ErrScripted = errors.New("the scripted model is built by the engine")

// Scripted is the model string of the embedded scripted model.
const Scripted = "scripted"

// Options tune every provider. The zero value is the production default.
type Options struct {
	// HTTPClient carries requests; nil means a plain client.
	HTTPClient *http.Client
	// Timeout bounds each request, streaming included; 0 means 120 s.
	Timeout time.Duration
	// MaxRetries after a 429, 5xx, timeout or network error; 0 means 4,
	// negative means none.
	MaxRetries int
	// MaxTokens bounds each answer; 0 means the provider default (8192 for
	// Anthropic, which requires one; the server's for OpenAI and Gemini).
	MaxTokens int
	// Sleep and Jitter replace the backoff clock in tests (see retry.Policy).
	Sleep  func(ctx context.Context, d time.Duration) error
	Jitter func(d time.Duration) time.Duration
	// Logger, when set, gets one warning per retry (never a key or a prompt).
	Logger *zerolog.Logger
	// Scripted builds the model for "scripted"; nil makes New return
	// ErrScripted.
	Scripted func() (model.Model, error)
}

// Spec is a parsed model string.
type Spec struct {
	Provider string // "openai", "anthropic", "gemini" or "scripted"
	Model    string // "" for scripted
}

func (s Spec) String() string {
	if s.Provider == Scripted {
		return Scripted
	}
	return s.Provider + "/" + s.Model
}

// registry is every provider a model string may name, in the order
// errors list them: the variables it reads and how its model is built.
var registry = []entry{
	{openai.Name, []string{"OPENAI_API_KEY"}, "OPENAI_BASE_URL", func(c conn) (model.Model, error) {
		return openai.New(openai.Config{Model: c.model, APIKey: c.key, KeyEnv: c.keyEnv, BaseURL: c.baseURL, HTTPClient: c.opts.HTTPClient, MaxTokens: c.opts.MaxTokens, Retry: c.retry})
	}},
	{openai.ResponsesName, []string{"OPENAI_API_KEY"}, "OPENAI_BASE_URL", func(c conn) (model.Model, error) {
		return openai.NewResponses(openai.Config{Model: c.model, APIKey: c.key, KeyEnv: c.keyEnv, BaseURL: c.baseURL, HTTPClient: c.opts.HTTPClient, MaxTokens: c.opts.MaxTokens, Retry: c.retry})
	}},
	{anthropic.Name, []string{"ANTHROPIC_API_KEY"}, "ANTHROPIC_BASE_URL", func(c conn) (model.Model, error) {
		return anthropic.New(anthropic.Config{Model: c.model, APIKey: c.key, KeyEnv: c.keyEnv, BaseURL: c.baseURL, HTTPClient: c.opts.HTTPClient, MaxTokens: c.opts.MaxTokens, Retry: c.retry})
	}},
	{gemini.Name, []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, "GEMINI_BASE_URL", func(c conn) (model.Model, error) {
		return gemini.New(gemini.Config{Model: c.model, APIKey: c.key, KeyEnv: c.keyEnv, BaseURL: c.baseURL, HTTPClient: c.opts.HTTPClient, MaxTokens: c.opts.MaxTokens, Retry: c.retry})
	}},
}

type entry struct {
	name string
	// keys are the variables that may hold the API key, the first set
	// one winning; baseURL is the variable of the server's URL.
	keys    []string
	baseURL string
	build   func(c conn) (model.Model, error)
}

// keyNames names p's key variables for a message: "GEMINI_API_KEY (or
// GOOGLE_API_KEY)".
func (p *entry) keyNames() string {
	if len(p.keys) == 1 {
		return p.keys[0]
	}
	return p.keys[0] + " (or " + strings.Join(p.keys[1:], ", ") + ")"
}

// conn is what a provider's model is built from.
type conn struct {
	// keyEnv is the variable key came from; when none is set, every
	// variable it may come from.
	model, key, keyEnv, baseURL string
	opts                        Options
	retry                       retry.Policy
}

// lookup finds a provider of the registry by name; nil when none has it.
func lookup(name string) *entry {
	for i := range registry {
		if registry[i].name == name {
			return &registry[i]
		}
	}
	return nil
}

// Info is one provider of the registry as completion and the docs show
// it: its name and the environment variables it reads (Key names the key
// variables: "GEMINI_API_KEY (or GOOGLE_API_KEY)").
type Info struct {
	Name, Key, BaseURL string
}

// Providers lists the registry's providers in order (not scripted): what
// completion and the docs read, so a provider is listed once (M24).
func Providers() []Info {
	out := make([]Info, 0, len(registry))
	for _, p := range registry {
		out = append(out, Info{Name: p.name, Key: p.keyNames(), BaseURL: p.baseURL})
	}
	return out
}

// Names lists the providers a model string may name, scripted last.
func Names() []string {
	names := make([]string, 0, len(registry)+1)
	for _, p := range registry {
		names = append(names, p.name)
	}
	return append(names, Scripted)
}

// Parse checks a model string's form and that its provider is known.
func Parse(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	if s == Scripted {
		return Spec{Provider: Scripted}, nil
	}
	if s == "" {
		return Spec{}, errors.New(`no model: set "model:" in the workflow or pass --model (openai/<model>, anthropic/<model>, gemini/<model> or scripted)`)
	}
	prov, name, ok := strings.Cut(s, "/")
	if !ok {
		return Spec{}, fmt.Errorf("model %q: want provider/model, e.g. openai/gpt-5.4-mini, anthropic/claude-sonnet-4-5, gemini/gemini-2.5-flash or scripted", s)
	}
	if prov == Scripted {
		return Spec{}, fmt.Errorf("model %q: the scripted model takes no name; write scripted", s)
	}
	if lookup(prov) == nil {
		msg := fmt.Sprintf("model %q: unknown provider %q (known: %s)", s, prov, strings.Join(Names(), ", "))
		if hint := diag.DidYouMean(prov, Names(), nil); hint != "" {
			msg += "; " + hint
		}
		return Spec{}, errors.New(msg)
	}
	if strings.Contains(s, model.ChainSep) {
		return Spec{}, fmt.Errorf("model %q: a fallback chain is a list, model: [%s]", s, strings.Join(model.Chain(s), ", "))
	}
	if strings.TrimSpace(name) == "" || strings.ContainsAny(name, " \t\n") {
		return Spec{}, fmt.Errorf("model %q: the model name after %q is empty or has spaces", s, prov+"/")
	}
	return Spec{Provider: prov, Model: name}, nil
}

// Check reports, without building anything, whether New would fail for
// this string and environment: run it over every model a workflow names
// (workflow, agents, --model) before the run starts.
func Check(modelString string, getenv func(string) string) error {
	specs, err := ParseChain(modelString)
	if err != nil {
		return err
	}
	for _, spec := range specs {
		if spec.Provider == Scripted {
			continue
		}
		if _, _, _, _, err := credentials(spec, getenv); err != nil {
			return err
		}
	}
	return nil
}

// credentials finds spec's provider and reads its key and base URL.
func credentials(spec Spec, getenv func(string) string) (p *entry, key, keyEnv, base string, err error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	p = lookup(spec.Provider)
	if p == nil {
		// Parse has refused it already, through the same lookup; were
		// the two ever to disagree, no other provider is built instead.
		return nil, "", "", "", fmt.Errorf("model %s: unknown provider %q (known: %s)", spec, spec.Provider, strings.Join(Names(), ", "))
	}
	keyEnv = p.keyNames()
	for _, k := range p.keys {
		if key = strings.TrimSpace(getenv(k)); key != "" {
			keyEnv = k
			break
		}
	}
	base = strings.TrimSpace(getenv(p.baseURL))
	if key == "" && base == "" {
		return nil, "", "", "", fmt.Errorf("model %s: %s is not set; export your API key, set %s for a local server that needs none, or use --model scripted to run offline", spec, p.keyNames(), p.baseURL)
	}
	// A base URL without a key is a local OpenAI-compatible server
	// (Ollama, vLLM, llama.cpp): no credentials header is sent.
	if base != "" {
		u, perr := url.Parse(base)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, "", "", "", fmt.Errorf("model %s: %s=%q is not an http(s) URL", spec, p.baseURL, redact.New(key).String(base))
		}
	}
	return p, key, keyEnv, base, nil
}

// New builds the model a model string names: a fallback chain's models
// each with its credentials, the chain answering as one model.
func New(modelString string, getenv func(string) string, opts Options) (model.Model, error) {
	if names := model.Chain(strings.TrimSpace(modelString)); len(names) > 1 {
		if _, err := ParseChain(modelString); err != nil {
			return nil, err
		}
		c := &chain{names: names, log: opts.Logger}
		for _, n := range names {
			m, err := New(n, getenv, opts)
			if err != nil {
				return nil, err
			}
			c.models = append(c.models, m)
		}
		return c, nil
	}
	spec, err := Parse(modelString)
	if err != nil {
		return nil, err
	}
	if spec.Provider == Scripted {
		if opts.Scripted == nil {
			return nil, ErrScripted
		}
		return opts.Scripted()
	}
	p, key, keyEnv, base, err := credentials(spec, getenv)
	if err != nil {
		return nil, err
	}
	policy := retry.Policy{
		MaxRetries: opts.MaxRetries,
		Timeout:    opts.Timeout,
		Sleep:      opts.Sleep,
		Jitter:     opts.Jitter,
	}
	if opts.Logger != nil && key == "" {
		opts.Logger.Info().Str("model", spec.String()).Str("base_url", base).
			Msgf("%s is not set: requests go to %s without credentials", p.keyNames(), base)
	}
	if opts.Logger != nil {
		log, secrets := opts.Logger, redact.New(key)
		policy.OnRetry = func(attempt int, wait time.Duration, err error) {
			log.Warn().Str("model", spec.String()).Int("attempt", attempt).Dur("wait", wait).
				Str("error", secrets.String(err.Error())).Msg("model call failed; retrying")
		}
	}
	return p.build(conn{model: spec.Model, key: key, keyEnv: keyEnv, baseURL: base, opts: opts, retry: policy})
}
