package mcptool

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/fsdrun/fsd/internal/mcptest"
	"github.com/fsdrun/fsd/internal/proctest"
	"github.com/fsdrun/fsd/internal/testpar"
)

// A traced call sends its W3C trace context in _meta (traceparent,
// tracestate), where an MCP server that traces finds it; an untraced
// call sends none.
func TestCallSendsTraceParent(t *testing.T) {
	testpar.UnlessRace(t)
	srv := mcptest.HTTP(nil)
	defer srv.Close()
	p := newPool(t, newEnv(t), Options{})
	tools, notes := p.Acquire(context.Background(), httpSkill(srv.URL, []string{"meta"}))
	if len(notes) > 0 {
		t.Fatalf("notes: %v", notes)
	}
	meta := byName(tools)["meta"]
	traced, parent, state := proctest.Traced()
	for _, tt := range []struct {
		name               string
		ctx                context.Context
		parent, tracestate any
	}{
		{"traced", traced, parent, state},
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
