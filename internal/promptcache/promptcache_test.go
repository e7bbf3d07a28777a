package promptcache

import (
	"encoding/json"
	"fmt"
	"testing"
)

// body is a Messages request: one tool, a system block, and a user
// message of n text blocks, with breakpoints on the blocks marked.
func body(n int, marked ...int) []byte {
	cc := map[string]any{"type": "ephemeral"}
	content := make([]map[string]any, n)
	for i := range content {
		content[i] = map[string]any{"type": "text", "text": fmt.Sprintf("block %d", i)}
	}
	for _, m := range marked {
		content[m]["cache_control"] = cc
	}
	b, _ := json.Marshal(map[string]any{
		"tools":    []any{map[string]any{"name": "t", "input_schema": map[string]any{"type": "object"}, "cache_control": cc}},
		"system":   []any{map[string]any{"type": "text", "text": "You help."}},
		"messages": []any{map[string]any{"role": "user", "content": content}},
	})
	return b
}

// The cache serves the longest prefix an earlier breakpoint wrote that
// ends with a breakpoint or one of the 20 blocks before it.
func TestSend(t *testing.T) {
	for _, tc := range []struct {
		name        string
		first, then []byte
		want        int // blocks read of then
	}{
		{"same request", body(3, 2), body(3, 2), 5},
		{"grown by 20 blocks", body(3, 2), body(23, 22), 5},
		{"grown by 21 blocks: past the lookback, only the tool", body(3, 2), body(24, 23), 1},
		{"grown by 21 blocks, old end marked", body(3, 2), body(24, 2, 23), 5},
		{"a prefix no breakpoint wrote", body(3, 2), body(2, 1), 1},
		{"no breakpoint in the first", body(3), body(3, 2), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Cache
			if _, err := c.Send(tc.first); err != nil {
				t.Fatal(err)
			}
			s, err := c.Send(tc.then)
			if err != nil {
				t.Fatal(err)
			}
			if s.Read != tc.want {
				t.Errorf("read %d blocks, want %d", s.Read, tc.want)
			}
		})
	}
}

func TestSendRejectsWhatIsNotABody(t *testing.T) {
	var c Cache
	if _, err := c.Send([]byte(`{"messages":[{"role":"user","content":"x"}]`)); err == nil {
		t.Error("no error for a body that is not JSON")
	}
}
