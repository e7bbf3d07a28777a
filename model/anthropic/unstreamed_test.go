package anthropic

import (
	"testing"

	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/internal/providertest"
	"github.com/fsdrun/fsd/model/retry"
)

// TestUnstreamed: a server that answers a streaming request with plain
// JSON is read for what it sent. A whole message is the answer; an error
// body is that error after one request, retried only for an overload or a
// rate limit; JSON that is no message, or a page that is no stream, fails
// once and says what came.
func TestUnstreamed(t *testing.T) {
	prov.Unstreamed(t, Name, testKey, wantResponse())
	errBody := func(typ, msg string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"}}`
	}
	ok := fakeserver.Reply{Body: okStream, Chunked: true, Header: sse}
	prov.StreamFailures(t, testKey, []providertest.Failure{
		{Name: "error body", Replies: []fakeserver.Reply{{Body: errBody("invalid_request_error", "model: claude-nope")}},
			WantCalls: 1, WantErr: "anthropic: HTTP 200 OK: error instead of a stream: model: claude-nope"},
		{Name: "error body echoing the key", Replies: []fakeserver.Reply{{Body: errBody("authentication_error", "bad key "+testKey)}},
			WantCalls: 1, WantErr: "error instead of a stream: bad key [REDACTED]"},
		{Name: "overload body is retried", Replies: []fakeserver.Reply{{Body: errBody("overloaded_error", "Overloaded")}, ok},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}},
		{Name: "rate limit body is retried", Replies: []fakeserver.Reply{{Body: errBody("rate_limit_error", "slow down")}, ok},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}},
		{Name: "JSON that is no message", Replies: []fakeserver.Reply{{Body: `{"detail":"Not Found"}`}}, WantCalls: 1,
			WantErr: `anthropic: the server answered a streaming request with Content-Type application/json, not an event stream, ` +
				`and not a whole answer either (anthropic: the server's answer is not a message: it has no id and no content); ` +
				`the reply begins "{\"detail\":\"Not Found\"}"`},
	})
}
