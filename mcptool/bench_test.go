package mcptool

import (
	"context"
	"encoding/json"
	"testing"
)

// BenchmarkStdioCall is one MCP tool round over stdio against the in-repo
// test server (this binary): argument check against the input schema,
// the JSON-RPC request and its answer through the pipes, the result
// rendered for the model. The server is started once, outside the loop.
func BenchmarkStdioCall(b *testing.B) {
	e := newEnv(b)
	p := newPool(b, e, Options{})
	delete(e.vars, "FSD_MCPTEST_LOG") // measure the round, not a file append
	tools, notes := p.Acquire(context.Background(), stdioSkill(b, []string{"echo"}))
	if len(tools) != 1 {
		b.Fatalf("tools %d, notes %v", len(tools), notes)
	}
	args := json.RawMessage(`{"text":"hello"}`)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if res := tools[0].Call(ctx, args, nil); res.IsError {
			b.Fatal(res.Text)
		}
	}
}
