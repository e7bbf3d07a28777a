package wire

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/model/retry"
)

// An error status becomes a StatusError with the provider's explanation,
// and a key the server echoes back never reaches it.
func TestPostErrorStatusMasksSecrets(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
	for name, body := range map[string]string{
		"envelope": `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + key + `"}}`,
		"plain":    "bad key " + key,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(body))
			}))
			defer srv.Close()
			_, err := Post(context.Background(), srv.Client(), Request{
				Provider: "test", URL: srv.URL, Body: map[string]string{"a": "b"}, Secrets: redact.New(key),
			})
			var se *retry.StatusError
			if !errors.As(err, &se) || se.Status != http.StatusUnauthorized {
				t.Fatalf("err %v, want a 401 StatusError", err)
			}
			if strings.Contains(se.Error(), key) || !strings.Contains(se.Message, "key") {
				t.Errorf("message %q: the key must be masked, the explanation kept", se.Message)
			}
		})
	}
}

// The wait a server asks for is its Retry-After header, else the
// RetryInfo detail of a Google API error body; neither is no wait.
func TestRetryAfter(t *testing.T) {
	body := []byte(`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"quota","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure"},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"12.5s"}]}}`)
	for _, tt := range []struct {
		name   string
		header http.Header
		body   []byte
		want   time.Duration
	}{
		{"header", http.Header{"Retry-After": {"3"}}, body, 3 * time.Second},
		{"RetryInfo", nil, body, 12500 * time.Millisecond},
		{"neither", nil, []byte(`{"error":{"message":"slow down"}}`), 0},
		{"not JSON", nil, []byte(`busy`), 0},
		// Too long for a Duration: the longest wait, which the retry
		// policy refuses, not none (a retry at once).
		{"RetryInfo past a Duration", nil, []byte(`{"error":{"code":429,"message":"quota","details":[{"retryDelay":"99999999999s"}]}}`), math.MaxInt64},
		{"RetryInfo negative", nil, []byte(`{"error":{"code":429,"message":"quota","details":[{"retryDelay":"-5s"}]}}`), 0},
	} {
		if got := retryAfter(tt.header, tt.body); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}
