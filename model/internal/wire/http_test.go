package wire

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
