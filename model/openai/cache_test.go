package openai

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
)

// With Cache set, the request carries the generator's prompt_cache_key;
// cached prompt tokens come back in the usage.
func TestPromptCacheKey(t *testing.T) {
	for _, on := range []bool{true, false} {
		req := conversation()
		req.Cache, req.CacheKey = on, "fsd/run/host"
		resp, sent := prov.Call(t, fakeserver.Reply{Body: `{"id":"c","object":"chat.completion","created":1,"model":"m",
 "choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],
 "usage":{"prompt_tokens":1000,"completion_tokens":5,"total_tokens":1005,"prompt_tokens_details":{"cached_tokens":768}}}`}, req)
		if u := resp.Usage; u.InputTokens != 1000 || u.CachedInputTokens != 768 {
			t.Errorf("usage %+v, want 1000 in of which 768 cached", u)
		}
		var body map[string]any
		if err := json.Unmarshal(sent, &body); err != nil {
			t.Fatal(err)
		}
		want := any(nil)
		if on {
			want = "fsd/run/host"
		}
		if body["prompt_cache_key"] != want {
			t.Errorf("cache %v: prompt_cache_key = %v, want %v", on, body["prompt_cache_key"], want)
		}
	}
}

// A streamed answer's usage chunk reports cached prompt tokens too.
// (OpenAI caches prefixes on its own and bills no cache writes, so none
// come back.)
func TestCacheUsageStreamed(t *testing.T) {
	stream := `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"}}]}

data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":5,"total_tokens":1005,"prompt_tokens_details":{"cached_tokens":768}}}

data: [DONE]

`
	req := conversation()
	req.Cache, req.CacheKey, req.OnText = true, "fsd/run/task:t1", func(string) {}
	resp, sent := prov.Call(t, fakeserver.Reply{Body: stream, Chunked: true, Header: sse}, req)
	if want := (model.Usage{InputTokens: 1000, OutputTokens: 5, CachedInputTokens: 768}); resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
	var body map[string]any
	if err := json.Unmarshal(sent, &body); err != nil {
		t.Fatal(err)
	}
	if body["prompt_cache_key"] != "fsd/run/task:t1" {
		t.Errorf("streamed request: prompt_cache_key = %v", body["prompt_cache_key"])
	}
}

// A key longer than OpenAI accepts (a long task id) is sent within
// MaxCacheKey bytes, the same for each request of its generator and
// distinct from a key that starts alike. The limit is in bytes: a key of
// 60 characters is 106 bytes, and its cut falls inside an "é".
func TestPromptCacheKeyFits(t *testing.T) {
	long := "fsd/20261130-203046-8a83c162/task:" + strings.Repeat("résumé-of-the-quarter-", 4)
	accented := "fsd/run/task:x" + strings.Repeat("é", 46)
	keys := map[string]string{}
	for _, k := range []string{long, long, long + "#2", accented, "fsd/run/host"} {
		req := conversation()
		req.Cache, req.CacheKey = true, k
		_, sent := prov.Call(t, fakeserver.Reply{Body: `{"id":"c","object":"chat.completion","created":1,"model":"m",
 "choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`}, req)
		var body struct {
			Key string `json:"prompt_cache_key"`
		}
		if err := json.Unmarshal(sent, &body); err != nil {
			t.Fatal(err)
		}
		if len(body.Key) > MaxCacheKey || !utf8.ValidString(body.Key) {
			t.Errorf("key %q: %d bytes, valid UTF-8 %v", body.Key, len(body.Key), utf8.ValidString(body.Key))
		}
		if prev, ok := keys[k]; ok && prev != body.Key {
			t.Errorf("the same key was sent as %q, then %q", prev, body.Key)
		}
		for other, sent := range keys {
			if other != k && sent == body.Key {
				t.Errorf("keys %q and %q were both sent as %q", other, k, sent)
			}
		}
		keys[k] = body.Key
	}
	if keys["fsd/run/host"] != "fsd/run/host" {
		t.Errorf("a short key was changed to %q", keys["fsd/run/host"])
	}
}
