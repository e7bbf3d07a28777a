package gemini

import (
	"testing"
	"time"

	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/internal/providertest"
	"github.com/fsdrun/fsd/model/retry"
)

// TestUnstreamed: a server that answers a streaming request with plain
// JSON (a gateway that ignores alt=sse) is read for what it sent. A whole
// response is the answer; an error body is that error after one request,
// retried only for an exhausted quota or an overload (the wait a RetryInfo
// asks for honoured); JSON that is no response fails once and says what
// came.
func TestUnstreamed(t *testing.T) {
	prov.Unstreamed(t, Name, testKey, wantResponse())
	ok := fakeserver.Reply{Body: okStream, Chunked: true, Header: sse}
	prov.StreamFailures(t, testKey, []providertest.Failure{
		{Name: "error body", Replies: []fakeserver.Reply{{Body: googleError(404, "NOT_FOUND", "models/gemini-nope is not found for API version v1beta")}},
			WantCalls: 1, WantErr: "gemini: HTTP 200 OK: error instead of a stream: models/gemini-nope is not found for API version v1beta"},
		{Name: "error body echoing the key", Replies: []fakeserver.Reply{{Body: googleError(400, "INVALID_ARGUMENT", "API key not valid: "+testKey)}},
			WantCalls: 1, WantErr: "error instead of a stream: API key not valid: [REDACTED]"},
		{Name: "quota body is retried after its RetryInfo", Replies: []fakeserver.Reply{{Body: quotaError}, ok},
			WantCalls: 2, WantWaits: providertest.Waits{7 * time.Second}},
		{Name: "overload body is retried", Replies: []fakeserver.Reply{{Body: googleError(503, "UNAVAILABLE", "The model is overloaded.")}, ok},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}},
		{Name: "JSON that is no response", Replies: []fakeserver.Reply{{Body: `{"detail":"Not Found"}`}}, WantCalls: 1,
			WantErr: `gemini: the server answered a streaming request with Content-Type application/json, not an event stream, ` +
				`and not a whole answer either (gemini: the server returned no candidates); the reply begins "{\"detail\":\"Not Found\"}"`},
	})
}
