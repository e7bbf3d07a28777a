package retry

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeClock records the waits instead of sleeping.
type fakeClock struct{ waits []time.Duration }

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	c.waits = append(c.waits, d)
	return ctx.Err()
}

func noJitter(d time.Duration) time.Duration { return d }

func TestDo(t *testing.T) {
	rateLimited := &StatusError{Provider: "p", Status: 429, RetryAfter: 3 * time.Second}
	tests := []struct {
		name      string
		errs      []error // one per attempt; nil ends
		max       int
		wantCalls int
		wantWaits []time.Duration
		wantErr   string
	}{
		{name: "success first", errs: []error{nil}, wantCalls: 1},
		{name: "429 honours Retry-After", errs: []error{rateLimited, nil}, wantCalls: 2, wantWaits: []time.Duration{3 * time.Second}},
		{name: "500 backs off", errs: []error{&StatusError{Provider: "p", Status: 500}, &StatusError{Provider: "p", Status: 503}, nil}, wantCalls: 3,
			wantWaits: []time.Duration{500 * time.Millisecond, time.Second}},
		{name: "400 never retried", errs: []error{&StatusError{Provider: "p", Status: 400, Message: "bad tool schema"}}, wantCalls: 1,
			wantErr: "p: HTTP 400 Bad Request: bad tool schema"},
		{name: "plain error not retried", errs: []error{errors.New("decode: bad json")}, wantCalls: 1, wantErr: "decode: bad json"},
		{name: "retries spent", max: 2, errs: []error{&StatusError{Provider: "p", Status: 502}, &StatusError{Provider: "p", Status: 502}, &StatusError{Provider: "p", Status: 502}},
			wantCalls: 3, wantWaits: []time.Duration{500 * time.Millisecond, time.Second}, wantErr: "gave up after 3 attempts"},
		{name: "retry-after too long", errs: []error{&StatusError{Provider: "p", Status: 429, RetryAfter: time.Hour}}, wantCalls: 1,
			wantErr: "longer than the 2m0s fsd waits"},
		{name: "network error retried", errs: []error{&netErr{}, nil}, wantCalls: 2, wantWaits: []time.Duration{500 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{}
			p := Policy{MaxRetries: tt.max, Sleep: clock.sleep, Jitter: noJitter}
			calls := 0
			err := Do(context.Background(), p, "p", func(context.Context) error {
				e := tt.errs[calls]
				calls++
				return e
			})
			if calls != tt.wantCalls {
				t.Errorf("calls = %d, want %d", calls, tt.wantCalls)
			}
			if diff := cmp.Diff(tt.wantWaits, clock.waits); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

type netErr struct{}

func (*netErr) Error() string   { return "connection reset" }
func (*netErr) Timeout() bool   { return false }
func (*netErr) Temporary() bool { return true }

func TestDoTimeoutPerAttempt(t *testing.T) {
	p := Policy{MaxRetries: -1, Timeout: time.Millisecond, Sleep: (&fakeClock{}).sleep}
	err := Do(context.Background(), p, "p", func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want a TimeoutError", err)
	}
}

func TestDoCancelStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := Do(ctx, Policy{Sleep: (&fakeClock{}).sleep}, "p", func(context.Context) error {
		calls++
		cancel()
		return &StatusError{Provider: "p", Status: 500}
	})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("err = %v after %d calls, want context.Canceled after 1", err, calls)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(10 * time.Second).Format(http.TimeFormat)}}, 10 * time.Second},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{nil, 0},
	}
	for _, tt := range tests {
		if got := ParseRetryAfter(tt.h, now); got != tt.want {
			t.Errorf("ParseRetryAfter(%v) = %v, want %v", tt.h, got, tt.want)
		}
	}
}

// A wait too long for a time.Duration is the longest one, not a negative
// one from the conversion's overflow (which Do took as "no wait asked" and
// retried at once), and a wait that is not a number is none.
func TestParseRetryAfterOutOfRange(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const longest = time.Duration(math.MaxInt64)
	tests := []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Retry-After": {"1e12"}}, longest},
		{http.Header{"Retry-After": {"9999999999999"}}, longest},
		{http.Header{"Retry-After": {"Inf"}}, longest},
		{http.Header{"Retry-After": {"1e400"}}, longest},
		{http.Header{"Retry-After": {"NaN"}}, 0},
		{http.Header{"Retry-After": {"-5"}}, 0},
		{http.Header{"Retry-After": {"-Inf"}}, 0},
		{http.Header{"Retry-After-Ms": {"1e18"}}, longest},
		{http.Header{"Retry-After-Ms": {"Inf"}}, longest},
		{http.Header{"Retry-After-Ms": {"NaN"}, "Retry-After": {"3"}}, 3 * time.Second},
	}
	for _, tt := range tests {
		if got := ParseRetryAfter(tt.h, now); got != tt.want {
			t.Errorf("ParseRetryAfter(%v) = %v, want %v", tt.h, got, tt.want)
		}
	}
	// Do refuses the wait rather than retrying at once.
	calls := 0
	err := Do(context.Background(), Policy{Sleep: func(context.Context, time.Duration) error { return nil }}, "openai", func(context.Context) error {
		calls++
		return &StatusError{Provider: "openai", Status: 429, RetryAfter: ParseRetryAfter(http.Header{"Retry-After": {"1e12"}}, now)}
	})
	if calls != 1 || err == nil || !strings.Contains(err.Error(), "longer than the 2m0s fsd waits") {
		t.Errorf("Retry-After 1e12: %d calls, err %v; want 1 call refused as too long", calls, err)
	}
}

func TestEqualJitterBounds(t *testing.T) {
	for range 1000 {
		if d := equalJitter(time.Second); d < 500*time.Millisecond || d > time.Second {
			t.Fatalf("jitter %v outside [0.5s, 1s]", d)
		}
	}
}
