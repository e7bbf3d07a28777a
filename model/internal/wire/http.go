package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/retry"
)

// maxErrorBody bounds how much of an error answer is read: its message is
// clipped to one line anyway.
const maxErrorBody = 64 << 10

// Request is one POST of a JSON body.
type Request struct {
	Provider string
	URL      string
	Header   http.Header
	Body     any
	// Secrets are masked in the message of an error status (a server may
	// echo the key it was sent).
	Secrets redact.Secrets
}

// Post sends r and returns the response when its status is a success. An
// error status becomes a *retry.StatusError (with the server's Retry-After)
// and the body is closed. The caller closes a successful response's body.
func Post(ctx context.Context, client *http.Client, r Request) (*http.Response, error) {
	body, err := json.Marshal(r.Body)
	if err != nil {
		return nil, retry.Permanent(fmt.Errorf("%s: encoding the request: %w", r.Provider, err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(body))
	if err != nil {
		return nil, retry.Permanent(fmt.Errorf("%s: %w", r.Provider, err))
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "fsd")
	resp, err := client.Do(req)
	if err != nil {
		var re *redirectError
		if errors.As(err, &re) {
			// Not the *url.Error around it, which counts as a network
			// error and would be retried.
			return nil, retry.Permanent(re)
		}
		return nil, err
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, msg := ErrorEnvelope(raw)
	if msg == "" {
		msg = string(raw)
	}
	return nil, &retry.StatusError{
		Provider:   r.Provider,
		Status:     resp.StatusCode,
		Message:    r.Secrets.String(Clip(msg)),
		RetryAfter: retryAfter(resp.Header, raw),
	}
}

// retryAfter is how long a server asked to wait: its Retry-After headers,
// else the google.rpc.RetryInfo detail of a Google API error body
// ({"error":{"details":[{"retryDelay":"37s"}]}}), which Gemini sends
// with a 429 instead of a header.
func retryAfter(h http.Header, body []byte) time.Duration {
	if d := retry.ParseRetryAfter(h, time.Now()); d > 0 {
		return d
	}
	e, _ := envelope(body)
	for _, det := range e.Details {
		if d, err := time.ParseDuration(det.RetryDelay); err == nil && d > 0 {
			return d
		}
		// A protobuf Duration is seconds ("37s"); read as Retry-After's
		// seconds, one too long for a Duration is the longest wait
		// rather than none, which ParseDuration's overflow error made it.
		if secs, ok := strings.CutSuffix(det.RetryDelay, "s"); ok {
			if d := retry.ParseRetryAfter(http.Header{"Retry-After": {secs}}, time.Time{}); d > 0 {
				return d
			}
		}
	}
	return 0
}

// ReadJSON reads a whole (non-streamed) answer into v. A body cut short is
// a network error (retried); a body over model.MaxResponseBytes or one that
// is not JSON is permanent.
func ReadJSON(provider string, body io.Reader, v any) error {
	raw, err := readWhole(provider, body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return retry.Permanent(fmt.Errorf("%s: the server's answer is not valid JSON: %w", provider, err))
	}
	return nil
}

// readWhole reads a whole answer's body, failing with TooLarge past the
// cap rather than holding more.
func readWhole(provider string, body io.Reader) ([]byte, error) {
	// JSON escaping can double the size of text: the body may be twice the
	// answer cap before the answer itself is.
	limit := int64(2 * model.MaxResponseBytes)
	raw, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > limit {
		return nil, TooLarge(provider)
	}
	return raw, nil
}

// TooLarge is the error for an answer over model.MaxResponseBytes. It is
// not retried: asking again would most likely pay for the same answer.
func TooLarge(provider string) error {
	return retry.Permanent(fmt.Errorf("%s: the model's answer is larger than the %d MiB limit; ask for less or lower max tokens",
		provider, model.MaxResponseBytes>>20))
}

// MaxParts bounds the parts of one streamed answer (OpenAI's tool calls and
// output items, Anthropic's content blocks, Gemini's parts). Each is held
// until the answer is whole, and a part may be empty, so the byte cap
// alone did not bound what a stream of empty parts made fsd hold: a
// million took 200-800 MB, and a server could send them until the request
// timeout. No model answers with nearly as many.
const MaxParts = 1 << 17

// TooManyParts is the error for an answer of more than MaxParts parts;
// like TooLarge, it is not retried.
func TooManyParts(provider string) error {
	return retry.Permanent(fmt.Errorf("%s: the model's answer has more than %d parts; ask for less", provider, MaxParts))
}

// Truncated is the error for a stream that ended before the provider said
// it was complete: retried, since the next attempt is likely whole.
func Truncated(provider, missing string) error {
	return &retry.TruncatedError{Provider: provider, Missing: missing}
}

// ErrorEnvelope reads the {"error":{"type":…,"message":…}} body the APIs
// use.
func ErrorEnvelope(body []byte) (typ, msg string) {
	e, ok := envelope(body)
	if !ok {
		return "", ""
	}
	return e.Type, e.Message
}

// apiError is the error object of an error body. Code is a string on
// OpenAI ("rate_limit_exceeded") and a number on some compatible servers
// and Google's APIs, whose Status names the kind (RESOURCE_EXHAUSTED)
// and whose Details may say when to retry.
type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Code    any    `json:"code"`
	Status  string `json:"status"`
	Details []struct {
		RetryDelay string `json:"retryDelay"`
	} `json:"details"`
}

// envelope reads an error body: {"error":{…}} as the APIs send it, or
// {"error":"message"} as some compatible servers do. ok is false when the
// body is not one, or says nothing.
func envelope(body []byte) (e apiError, ok bool) {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || len(env.Error) == 0 {
		return apiError{}, false
	}
	if json.Unmarshal(env.Error, &e) != nil {
		if json.Unmarshal(env.Error, &e.Message) != nil {
			return apiError{}, false
		}
	}
	return e, e.Message != ""
}

// Clip keeps an error message to one readable line.
func Clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 300 {
		return string(r[:300]) + "…"
	}
	return s
}

// IsSyntax reports whether err is a JSON syntax error.
func IsSyntax(err error) bool {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syn) || errors.As(err, &typ)
}
