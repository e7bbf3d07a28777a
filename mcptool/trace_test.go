package mcptool

import (
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/fsdrun/fsd/internal/mcptest"
)

// A traced call sends its W3C trace context in _meta (traceparent,
// tracestate), where an MCP server that traces finds it; an untraced
// call sends none.
func TestCallSendsTraceParent(t *testing.T) {
	srv := mcptest.HTTP(nil)
	defer srv.Close()
	p := newPool(t, newEnv(t), Options{})
	tools, notes := p.Acquire(context.Background(), httpSkill(srv.URL, []string{"meta"}))
	if len(notes) > 0 {
		t.Fatalf("notes: %v", notes)
	}
	meta := byName(tools)["meta"]
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, _ := trace.ParseTraceState("fsd=t1")
	traced := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts}))
	for _, tt := range []struct {
		name               string
		ctx                context.Context
		parent, tracestate any
	}{
		{"traced", traced, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "fsd=t1"},
		{"untraced", context.Background(), nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := meta.Call(tt.ctx, json.RawMessage(`{}`), nil)
			var got map[string]any
			if err := json.Unmarshal([]byte(res.Text), &got); err != nil && res.Text != "null" {
				t.Fatalf("meta answered %q", res.Text)
			}
			if got["traceparent"] != tt.parent || got["tracestate"] != tt.tracestate {
				t.Errorf("the server's _meta = %v, want traceparent %v, tracestate %v", got, tt.parent, tt.tracestate)
			}
		})
	}
}
