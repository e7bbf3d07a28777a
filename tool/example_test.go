package tool_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tool"
)

func ExampleTool_Call() {
	t, err := tool.Compile(spec.Tool{
		Name: "greet",
		Input: map[string]any{
			"type":       "object",
			"properties": map[string]any{"who": map[string]any{"type": "string"}},
			"required":   []any{"who"},
		},
		Run: spec.ToolRun{Kind: spec.RunReply, Reply: "Hello, {{.who}}."},
	}, ".")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	fmt.Println(t.Call(ctx, json.RawMessage(`{"who":"Ann"}`), nil).Text)
	// Bad arguments are a result the model reads, not a Go error.
	r := t.Call(ctx, json.RawMessage(`{"who":7}`), nil)
	fmt.Println(r.IsError, r.Text)
	// Output:
	// Hello, Ann.
	// true invalid arguments:
	// - at /who: got number, want string
}
