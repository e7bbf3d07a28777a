package gemini

import (
	"encoding/json"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
)

// Gemini caches prefixes implicitly: with or without Cache, the request
// names no cachedContent and carries nothing else for the cache, and the
// tokens read from it come back as cached input, whole and streamed.
// promptTokenCount already counts them; thoughts are output.
func TestImplicitCacheUsage(t *testing.T) {
	const usageJSON = `"usageMetadata":{"promptTokenCount":1000,"candidatesTokenCount":5,"cachedContentTokenCount":768,"thoughtsTokenCount":40,"totalTokenCount":1045}`
	whole := `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}],` + usageJSON + `}`
	stream := `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"o"}]},"index":0}],"usageMetadata":{"promptTokenCount":1000,"candidatesTokenCount":1}}` + "\n\n" +
		`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"k"}]},"finishReason":"STOP","index":0}],` + usageJSON + `}` + "\n\n"
	want := model.Usage{InputTokens: 1000, OutputTokens: 45, CachedInputTokens: 768, ReasoningTokens: 40}
	for _, streamed := range []bool{false, true} {
		for _, on := range []bool{true, false} {
			req := conversation()
			req.Cache, req.CacheKey = on, "fsd/run/host"
			reply := fakeserver.Reply{Body: whole}
			if streamed {
				req.OnText = func(string) {}
				reply = fakeserver.Reply{Body: stream, Chunked: true, Header: sse}
			}
			resp, sent := prov.Call(t, reply, req)
			if resp.Usage != want || resp.Text != "ok" {
				t.Errorf("streamed %v, cache %v: %q with usage %+v, want %+v", streamed, on, resp.Text, resp.Usage, want)
			}
			var body map[string]any
			if err := json.Unmarshal(sent, &body); err != nil {
				t.Fatal(err)
			}
			for k := range body {
				if k != "contents" && k != "systemInstruction" && k != "tools" {
					t.Errorf("streamed %v, cache %v: the request carries %q", streamed, on, k)
				}
			}
		}
	}
}
