package mcpserve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsdrun/fsd/event"
)

const (
	callerParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	headerParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
)

// traceOf is a Runner that keeps the span context its run is given.
func traceOf(got *trace.SpanContext) Runner {
	return func(ctx context.Context, _ string, _ event.Sink) (string, error) {
		*got = trace.SpanContextFromContext(ctx)
		return "ok", nil
	}
}

// A call's _meta.traceparent puts the run in the caller's trace, under
// the caller's span, as a remote parent.
func TestCallJoinsTheCallersTraceFromMeta(t *testing.T) {
	var got trace.SpanContext
	cs := connect(t, traceOf(&got), func(*mcp.ProgressNotificationParams) {})
	params := &mcp.CallToolParams{Name: "weekly", Meta: mcp.Meta{"traceparent": callerParent, "tracestate": "vendor=1"}}
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	if got.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || got.SpanID().String() != "00f067aa0ba902b7" ||
		!got.IsRemote() || got.TraceState().Get("vendor") != "1" {
		t.Errorf("the run's span context = %+v, want the caller's", got)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "weekly"}); err != nil {
		t.Fatal(err)
	}
	if got.IsValid() {
		t.Errorf("a call without trace context ran in trace %s", got.TraceID())
	}
}

// Over Streamable HTTP, a traceparent header on the call's request does
// the same when _meta carries none; _meta wins over the header.
func TestCallJoinsTheCallersTraceFromHeader(t *testing.T) {
	var got trace.SpanContext
	srv := NewServer(Options{Tool: "weekly", Run: traceOf(&got)})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	client := &http.Client{Transport: headerTransport{}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: client}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, tt := range []struct {
		name string
		meta mcp.Meta
		want string
	}{
		{"header", nil, "0af7651916cd43dd8448eb211c80319c"},
		{"meta wins", mcp.Meta{"traceparent": callerParent}, "4bf92f3577b34da6a3ce929d0e0e4736"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "weekly", Meta: tt.meta}); err != nil {
				t.Fatal(err)
			}
			if got.TraceID().String() != tt.want {
				t.Errorf("the run's trace = %s, want %s", got.TraceID(), tt.want)
			}
		})
	}
}

// headerTransport sends every request with a traceparent header, as an
// HTTP client that traces does.
type headerTransport struct{}

func (headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("traceparent", headerParent)
	return http.DefaultTransport.RoundTrip(r)
}
