package proctest

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// Traced is a context carrying a sampled span context with a trace state,
// and that context in its W3C form (traceparent, tracestate): what a
// program or an MCP server started for a traced call is given.
func Traced() (ctx context.Context, traceparent, tracestate string) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, _ := trace.ParseTraceState("fsd=t1")
	ctx = trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts}))
	return ctx, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "fsd=t1"
}
