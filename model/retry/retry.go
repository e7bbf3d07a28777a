package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Defaults of Policy.
const (
	DefaultMaxRetries    = 4
	DefaultTimeout       = 120 * time.Second
	DefaultBaseDelay     = 500 * time.Millisecond
	DefaultMaxDelay      = 30 * time.Second
	DefaultMaxRetryAfter = 2 * time.Minute
)

// Policy is how one model call is attempted. The zero value is usable: every
// zero field takes its default.
type Policy struct {
	// MaxRetries is how many times a failed attempt is retried. 0 means
	// DefaultMaxRetries; a negative value disables retries.
	MaxRetries int
	// Timeout bounds each attempt, streaming included. 0 means DefaultTimeout.
	Timeout time.Duration
	// BaseDelay is the first backoff; it doubles per retry up to MaxDelay.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryAfter is the longest Retry-After fsd waits for; a server that
	// asks for more gets its error returned instead of a silent long stall.
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx is done. Tests replace it so that no test
	// sleeps for real seconds. Nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter maps a backoff to the delay actually waited. Nil means "equal
	// jitter": a uniform delay in [d/2, d], so that workers rate-limited
	// together do not come back together.
	Jitter func(d time.Duration) time.Duration
	// OnRetry, when set, hears about each retry before its wait (for logs).
	OnRetry func(attempt int, wait time.Duration, err error)
}

func (p Policy) withDefaults() Policy {
	if p.MaxRetries == 0 {
		p.MaxRetries = DefaultMaxRetries
	}
	if p.MaxRetries < 0 {
		p.MaxRetries = 0
	}
	if p.Timeout <= 0 {
		p.Timeout = DefaultTimeout
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	if p.Jitter == nil {
		p.Jitter = equalJitter
	}
	return p
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func equalJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(d-half)+1))
}

// Backoff is the delay before retry number attempt (1-based), before jitter.
func (p Policy) Backoff(attempt int) time.Duration {
	p = p.withDefaults()
	d := p.BaseDelay
	for i := 1; i < attempt && d < p.MaxDelay; i++ {
		d *= 2
	}
	return min(d, p.MaxDelay)
}

// StatusError is an error status answered by a provider's API.
type StatusError struct {
	Provider string // "openai", "anthropic", "gemini"
	Status   int
	// Message is the provider's own explanation, as sent.
	Message string
	// RetryAfter is what the server asked for (Retry-After, retry-after-ms);
	// zero when it did not say.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("%s: HTTP %d", e.Provider, e.Status)
	if t := http.StatusText(e.Status); t != "" {
		s += " " + t
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Retryable reports whether the status is worth another attempt: rate
// limits, request timeouts and server errors (Anthropic's 529 included).
func (e *StatusError) Retryable() bool {
	return e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout || e.Status >= 500
}

// TimeoutError is an attempt that ran out of its per-request time.
type TimeoutError struct {
	Provider string
	Timeout  time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: no complete answer within the request timeout of %s", e.Provider, e.Timeout)
}

// TruncatedError is a streamed answer that ended before the provider said
// it was complete (no finish reason, [DONE] or message_stop): the
// connection closed cleanly in the middle of an answer.
type TruncatedError struct {
	Provider string
	Missing  string // what the stream did not send, e.g. "message_stop"
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("%s: the answer stream ended early, without %s", e.Provider, e.Missing)
}

// Do runs fn until it succeeds, fails for good, retries are spent or ctx is
// done. Each attempt gets its own context bounded by the policy's timeout;
// cancelling ctx stops the attempt in flight and any wait.
func Do(ctx context.Context, p Policy, provider string, fn func(ctx context.Context) error) error {
	p = p.withDefaults()
	for attempt := 0; ; attempt++ {
		err := attemptOnce(ctx, p, provider, fn)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", provider, context.Cause(ctx))
		}
		retry, wait, why := classify(err, p)
		if !retry {
			if why != "" {
				return fmt.Errorf("%w (%s)", err, why)
			}
			return err
		}
		if attempt >= p.MaxRetries {
			if attempt == 0 {
				return err
			}
			return fmt.Errorf("%w (gave up after %d attempts)", err, attempt+1)
		}
		if wait == 0 {
			wait = p.Jitter(p.Backoff(attempt + 1))
		}
		if p.OnRetry != nil {
			p.OnRetry(attempt+1, wait, err)
		}
		if err := p.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("%s: %w", provider, err)
		}
	}
}

func attemptOnce(ctx context.Context, p Policy, provider string, fn func(ctx context.Context) error) error {
	actx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	err := fn(actx)
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		return &TimeoutError{Provider: provider, Timeout: p.Timeout}
	}
	return err
}

// classify says whether err is worth another attempt and how long the
// server asked to wait (0: use backoff). why explains a refusal to retry
// that the error itself does not.
func classify(err error, p Policy) (retry bool, wait time.Duration, why string) {
	if !Retryable(err) {
		return false, 0, ""
	}
	var se *StatusError
	if errors.As(err, &se) {
		if se.RetryAfter > p.MaxRetryAfter {
			return false, 0, fmt.Sprintf("the server asked to retry after %s, longer than the %s fsd waits", se.RetryAfter, p.MaxRetryAfter)
		}
		return true, se.RetryAfter, ""
	}
	return true, 0, ""
}

// Retryable reports whether err is of a kind another attempt may mend: a
// rate limit, an overload or another 5xx, a timeout, a cut stream, a
// network failure — however long the server asked to wait. A fallback
// chain goes on to its next model on such an error once the model's own
// retries are spent; on any other (a bad request, a refused key) it stops.
func Retryable(err error) bool {
	var pe *permanentError
	if errors.As(err, &pe) {
		return false
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.Retryable()
	}
	var te *TimeoutError
	var tr *TruncatedError
	if errors.As(err, &te) || errors.As(err, &tr) {
		return true
	}
	return IsNetwork(err)
}

// Permanent marks err as not worth another attempt whatever it wraps: a
// response body that is not valid JSON ends in io.ErrUnexpectedEOF just as a
// dropped connection does, but asking again will not mend it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// IsNetwork reports whether err is a transport failure (connection refused
// or reset, a body cut short) rather than an answer.
func IsNetwork(err error) bool {
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &oe), errors.As(err, &ne):
		return true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}

// ParseRetryAfter reads how long a server asked the client to wait: the
// retry-after-ms header (OpenAI), else Retry-After as seconds or an HTTP
// date. Zero when absent or unreadable.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if d, ok := parseWait(v, time.Millisecond); ok && d > 0 {
			return d
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if d, ok := parseWait(v, time.Second); ok {
		return d
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// parseWait reads a number of units as a wait; ok is false when v is no
// number. A wait longer than a Duration holds is the longest one: the
// conversion would overflow to a negative wait, which Do takes for none
// and retries at once instead of refusing the server's long wait. NaN
// and waits not above zero are none.
func parseWait(v string, unit time.Duration) (d time.Duration, ok bool) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	switch {
	case math.IsNaN(f) || f <= 0:
		return 0, true
	case f >= float64(math.MaxInt64)/float64(unit):
		return math.MaxInt64, true
	}
	return time.Duration(f * float64(unit)), true
}
