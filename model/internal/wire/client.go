package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/retry"
)

// Endpoint is what sets one provider's API apart on the HTTP level.
type Endpoint struct {
	Provider string // names every error: "openai", "anthropic", "gemini"
	Model    string // checked to be set; the provider puts it in the body
	// APIKey is sent in KeyHeader and masked in every error.
	APIKey string
	// KeyEnv names the environment variable the key came from, or would
	// (OPENAI_API_KEY): an error for a key the server refuses says what to
	// fix. "" names none.
	KeyEnv string
	// BaseURL points at another server speaking the same API; ""
	// means DefaultBaseURL.
	BaseURL, DefaultBaseURL string
	// Path is joined to the base URL: "/chat/completions". StreamPath,
	// when set, is joined instead for a streamed call (an API with a
	// method of its own for streaming); "" means Path.
	Path, StreamPath string
	// KeyHeader carries the API key after KeyPrefix ("Authorization",
	// "Bearer "). It is not sent when there is no key.
	KeyHeader, KeyPrefix string
	// Header is sent with every request (a version header).
	Header http.Header
	// HTTPClient carries the requests; nil means a plain client
	// (deadlines come from the retry policy, not from the client).
	HTTPClient *http.Client
	// Retry says how often and after what waits a failed call is tried
	// again.
	Retry retry.Policy
	// MaxTokens is the bound on an answer the provider's body asks for
	// (0: none); responses report it (model.Response.MaxTokens).
	MaxTokens int
}

// Format is what one provider's wire format reads: a whole answer, and
// a streamed one event by event.
type Format struct {
	// Whole reads a non-streamed answer's body (see JSON), and the body
	// of a streaming request's reply that came whole, as plain JSON.
	Whole func(body io.Reader) (*model.Response, error)
	// Stream reads a streamed answer, handing each text delta to onText
	// as it arrives. It returns an error when the stream ends before the
	// provider said the answer was complete (see Truncated), and a
	// *retry.StatusError for an error the server sent inside the stream
	// (the client masks the key in its message).
	Stream func(events *SSE, onText func(string)) (*model.Response, error)
}

// Client is one provider endpoint with its credentials, retry policy and
// wire format. It is safe for concurrent use.
type Client struct {
	provider string
	url      string
	stream   string // the URL of a streamed call
	header   http.Header
	http     *http.Client
	secrets  redact.Secrets
	policy   retry.Policy
	format   Format
	keyEnv   string
	hasKey   bool
	// server and maxTokens go on every response, for traces.
	server    string
	maxTokens int
}

// NewClient checks e and builds its client, which reads answers with f.
// It makes no request.
//
// S2: the key is masked in every error the client returns.
func NewClient(e Endpoint, f Format) (*Client, error) {
	if strings.TrimSpace(e.Model) == "" {
		return nil, errors.New(e.Provider + ": no model name")
	}
	if e.APIKey == "" && e.BaseURL == "" {
		// Only a server of one's own may go without a key.
		return nil, errors.New(e.Provider + ": no API key")
	}
	base := e.BaseURL
	if base == "" {
		base = e.DefaultBaseURL
	}
	hc := e.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	secrets := redact.New(e.APIKey)
	if e.APIKey != "" {
		hc = keepKeyHome(hc, e.Provider, secrets)
	}
	h := e.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if e.APIKey != "" {
		h.Set(e.KeyHeader, e.KeyPrefix+e.APIKey)
	}
	streamPath := e.StreamPath
	if streamPath == "" {
		streamPath = e.Path
	}
	server := ""
	if u, err := url.Parse(base); err == nil && u.Hostname() != "" {
		server = hostPort(u)
	}
	return &Client{
		server:    server,
		maxTokens: e.MaxTokens,
		provider:  e.Provider,
		url:       strings.TrimRight(base, "/") + e.Path,
		stream:    strings.TrimRight(base, "/") + streamPath,
		header:    h,
		http:      hc,
		secrets:   secrets,
		keyEnv:    e.KeyEnv,
		hasKey:    e.APIKey != "",
		policy:    e.Retry,
		format:    f,
	}, nil
}

// Generate posts body and reads the answer with the client's format:
// streamed when req.OnText is set, whole otherwise. Every attempt posts
// the same body. A streamed attempt that is retried after handing text
// to OnText calls req.OnReset first, so a consumer drops the text of
// the attempt that failed instead of showing it twice. The error has
// the key masked.
func (c *Client) Generate(ctx context.Context, req *model.Request, body any) (*model.Response, error) {
	var resp *model.Response
	sent := false // an attempt handed text to OnText
	err := retry.Do(ctx, c.policy, c.provider, func(ctx context.Context) error {
		var err error
		if req.OnText != nil {
			if sent && req.OnReset != nil {
				req.OnReset()
			}
			sent = false
			resp, err = c.attempt(ctx, body, func(d string) { sent = true; req.OnText(d) })
		} else {
			resp, err = c.attempt(ctx, body, nil)
		}
		return err
	})
	if err != nil {
		return nil, c.secrets.Error(c.keyHint(err))
	}
	resp.Server, resp.MaxTokens = c.server, req.Bound(c.maxTokens)
	if !plausible(resp.Usage) {
		// A lying or broken server's counts: booked, a negative one gave
		// budgets back and priced the call below zero, and one near
		// MaxInt64 overflowed the run's sum. Without them the engine
		// books its own estimate, marked as one.
		resp.Usage = model.Usage{}
	}
	return resp, nil
}

// maxUsage is more tokens than any one call sends or answers (context
// windows hold millions), and little enough that sums of millions of
// calls cannot overflow.
const maxUsage = 1 << 40

// plausible reports whether every count of u is one a call can have.
func plausible(u model.Usage) bool {
	for _, n := range []int{u.InputTokens, u.OutputTokens, u.CachedInputTokens, u.CacheWriteTokens, u.ReasoningTokens} {
		if n < 0 || n > maxUsage {
			return false
		}
	}
	return true
}

// keyHint adds to an error status that refuses the credentials which
// variable to fix: the server's own message ("Incorrect API key
// provided") does not say where fsd read the key.
func (c *Client) keyHint(err error) error {
	var se *retry.StatusError
	if c.keyEnv == "" || !errors.As(err, &se) {
		return err
	}
	// Google's APIs refuse a wrong or expired key with 400
	// INVALID_ARGUMENT ("API key not valid. Please pass a valid API key.").
	badKey := se.Status == http.StatusBadRequest && strings.Contains(se.Message, "API key") &&
		(strings.Contains(se.Message, "not valid") || strings.Contains(se.Message, "expired"))
	switch {
	case se.Status != http.StatusUnauthorized && se.Status != http.StatusForbidden && !badKey:
		return err
	case !c.hasKey:
		return fmt.Errorf("%w (no API key was sent: set %s)", err, c.keyEnv)
	case se.Status == http.StatusUnauthorized || badKey:
		return fmt.Errorf("%w (the server refused the API key: check %s)", err, c.keyEnv)
	}
	return fmt.Errorf("%w (the API key is not allowed this request: check %s)", err, c.keyEnv)
}

// attempt posts body once and reads the answer: streamed, handing text to
// onText, when onText is set; whole otherwise.
func (c *Client) attempt(ctx context.Context, body any, onText func(string)) (*model.Response, error) {
	h, url := c.header, c.url
	if onText != nil {
		h = h.Clone()
		h.Set("Accept", "text/event-stream")
		url = c.stream
	}
	r, err := Post(ctx, c.http, Request{Provider: c.provider, URL: url, Header: h, Body: body, Secrets: c.secrets})
	if err != nil {
		if c.isBare(err) {
			// Go's own words name the URL but not the provider.
			err = fmt.Errorf("%s: %w", c.provider, err)
		}
		return nil, err
	}
	defer r.Body.Close()
	var resp *model.Response
	if onText != nil {
		resp, err = c.readStream(r, onText)
	} else {
		resp, err = c.format.Whole(r.Body)
	}
	if c.isBare(err) {
		// A bare "unexpected EOF" says neither who nor what.
		err = fmt.Errorf("%s: the connection broke in the middle of the answer: %w", c.provider, err)
	}
	var se *retry.StatusError
	if errors.As(err, &se) {
		// An error sent inside a stream may echo the key, as an error
		// status may (Post masks those).
		se.Message = c.secrets.String(se.Message)
	}
	return resp, err
}

// isBare reports whether err is a transport failure as Go reports it,
// which no provider's code has named (wrapping keeps it retried).
func (c *Client) isBare(err error) bool {
	var tr *retry.TruncatedError
	var se *retry.StatusError
	return err != nil && retry.IsNetwork(err) && !errors.As(err, &tr) && !errors.As(err, &se) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) &&
		!strings.HasPrefix(err.Error(), c.provider+":")
}

// JSON is a Format.Whole that decodes the body into a T (see ReadJSON)
// and maps it with parse.
func JSON[T any](provider string, parse func(*T) (*model.Response, error)) func(io.Reader) (*model.Response, error) {
	return func(body io.Reader) (*model.Response, error) {
		var v T
		if err := ReadJSON(provider, body, &v); err != nil {
			return nil, err
		}
		return parse(&v)
	}
}

// hostPort is u's host and port, the scheme's port when u names none.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// keepKeyHome returns a copy of hc that refuses to follow a redirect to
// another origin (scheme, host and port) than the request's: Go's client
// drops only Authorization on a redirect to another host, and keeps
// every other header, so Anthropic's X-Api-Key and Gemini's
// X-Goog-Api-Key would follow a proxy's or a compromised server's
// Location to anyone, and even Authorization follows to another port.
// The refusal is permanent: the same server would redirect again.
func keepKeyHome(hc *http.Client, provider string, secrets redact.Secrets) *http.Client {
	c := *hc
	next := hc.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		from := via[0].URL
		if req.URL.Scheme != from.Scheme || hostPort(req.URL) != hostPort(from) {
			to := *req.URL
			to.RawQuery, to.Fragment, to.User = "", "", nil
			return &redirectError{fmt.Sprintf("%s: the server at %s redirected to %s, another origin; fsd does not send the API key there: point the base URL at the server that answers",
				provider, hostPort(from), secrets.String(to.String()))}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects") // as Go's default
		}
		return nil
	}
	return &c
}

// redirectError is a redirect keepKeyHome refused.
type redirectError struct{ msg string }

func (e *redirectError) Error() string { return e.msg }
