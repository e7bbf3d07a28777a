package openai

import (
	"testing"

	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/internal/providertest"
	"github.com/fsdrun/fsd/model/retry"
)

// TestUnstreamed: a server that answers a streaming request with plain
// JSON (OpenAI-compatible servers and proxies that ignore "stream") is
// read for what it sent. A whole completion is the answer; an error body
// is that error after one request, retried only for a rate limit; JSON
// that is no completion, or a page that is no stream, fails once and says
// what came.
func TestUnstreamed(t *testing.T) {
	prov.Unstreamed(t, Name, testKey, wantResponse())
	ok := fakeserver.Reply{Body: okStream, Chunked: true, Header: sse}
	prov.StreamFailures(t, testKey, []providertest.Failure{
		{Name: "error body", Replies: []fakeserver.Reply{{Body: `{"error":{"message":"The model gpt-nope does not exist","type":"invalid_request_error","code":"model_not_found"}}`}},
			WantCalls: 1, WantErr: "openai: HTTP 200 OK: error instead of a stream: The model gpt-nope does not exist"},
		{Name: "error as a string", Replies: []fakeserver.Reply{{Body: `{"error":"model 'llama9' not found, try pulling it first"}`}},
			WantCalls: 1, WantErr: "openai: HTTP 200 OK: error instead of a stream: model 'llama9' not found, try pulling it first"},
		{Name: "error body echoing the key", Replies: []fakeserver.Reply{{Body: `{"error":{"message":"Incorrect API key provided: ` + testKey + `"}}`}},
			WantCalls: 1, WantErr: "error instead of a stream: Incorrect API key provided: [REDACTED]"},
		{Name: "server error body is not retried", Replies: []fakeserver.Reply{{Body: `{"error":{"code":500,"message":"failed to load model","type":"server_error"}}`}},
			WantCalls: 1, WantErr: "error instead of a stream: failed to load model"},
		{Name: "rate limit body is retried", Replies: []fakeserver.Reply{{Body: `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`}, ok},
			WantCalls: 2, WantWaits: providertest.Waits{retry.DefaultBaseDelay}},
		{Name: "JSON that is no completion", Replies: []fakeserver.Reply{{Body: `{"detail":"Not Found"}`}}, WantCalls: 1,
			WantErr: `openai: the server answered a streaming request with Content-Type application/json, not an event stream, ` +
				`and not a whole answer either (openai: the server returned no choices); the reply begins "{\"detail\":\"Not Found\"}"`},
	})
}
