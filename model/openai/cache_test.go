package openai

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/fsdrun/fsd/model/internal/fakeserver"
)

// With Cache set, the request carries the generator's prompt_cache_key;
// cached prompt tokens come back in the usage.
func TestPromptCacheKey(t *testing.T) {
	for _, on := range []bool{true, false} {
		srv := fakeserver.New(fakeserver.Reply{Body: `{"id":"c","object":"chat.completion","created":1,"model":"m",
 "choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],
 "usage":{"prompt_tokens":1000,"completion_tokens":5,"total_tokens":1005,"prompt_tokens_details":{"cached_tokens":768}}}`})
		req := conversation()
		req.Cache, req.CacheKey = on, "fsd/run/host"
		resp, err := newModel(t, srv, nil).Generate(context.Background(), req)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if u := resp.Usage; u.InputTokens != 1000 || u.CachedInputTokens != 768 {
			t.Errorf("usage %+v, want 1000 in of which 768 cached", u)
		}
		var body map[string]any
		if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
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
