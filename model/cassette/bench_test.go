package cassette

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/model"
)

// BenchmarkSummarize measures the per-call cost recording and replay add:
// a full 60-message window, a 4 KB context and 20 tools.
func BenchmarkSummarize(b *testing.B) {
	req := &model.Request{Context: strings.Repeat("catalog line with some words\n", 140)}
	for i := range 60 {
		req.Messages = append(req.Messages, model.Message{Role: model.User, Text: strings.Repeat("word ", 80)})
		if i%2 == 1 {
			req.Messages[i] = model.Message{Role: model.Assistant, Calls: []model.ToolCall{{ID: fmt.Sprint("c", i), Name: "t", Args: json.RawMessage(`{"a":1,"b":"x"}`)}}}
		}
	}
	for i := range 20 {
		req.Tools = append(req.Tools, model.ToolDef{Name: fmt.Sprint("tool", i), Description: "does things", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)})
	}
	secrets := redact.New("sk-0123456789abcdef", "another-secret-value")
	b.ReportAllocs()
	for b.Loop() {
		_ = Summarize(req, secrets).Digest()
	}
}

func FuzzNewReplayer(f *testing.F) {
	f.Add([]byte(`{"fsd_recording":1}` + "\n" + `{"seq":0,"digest":"d","response":{"text":"x"}}`))
	f.Add([]byte(`{"seq":1,"agent":"a","digest":"d","error":"e"}`))
	f.Add([]byte("\n\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = NewReplayer(bytes.NewReader(data)) // must not panic
	})
}
