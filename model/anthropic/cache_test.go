package anthropic

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/fsdrun/fsd/model/internal/fakeserver"
)

// With Cache set, the request marks three prompt-cache breakpoints: the
// last tool, the system block and the last block of the last message;
// without it, none. Cache reads and writes come back in the usage.
func TestCacheControl(t *testing.T) {
	for _, on := range []bool{true, false} {
		srv := fakeserver.New(fakeserver.Reply{Body: `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],
 "stop_reason":"end_turn","usage":{"input_tokens":10,"cache_creation_input_tokens":30,"cache_read_input_tokens":900,"output_tokens":5}}`})
		req := conversation()
		req.Cache, req.CacheKey = on, "fsd/run/host"
		resp, err := newModel(t, srv, nil).Generate(context.Background(), req)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if u := resp.Usage; u.InputTokens != 940 || u.CachedInputTokens != 900 || u.CacheWriteTokens != 30 {
			t.Errorf("usage %+v, want 940 in of which 900 read from and 30 written to the cache", u)
		}
		var body struct {
			System []map[string]any `json:"system"`
			Tools  []map[string]any `json:"tools"`
			Msgs   []struct {
				Content []map[string]any `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		lastMsg := body.Msgs[len(body.Msgs)-1].Content
		marks := map[string]any{
			"last tool":    body.Tools[len(body.Tools)-1]["cache_control"],
			"system":       body.System[0]["cache_control"],
			"last message": lastMsg[len(lastMsg)-1]["cache_control"],
			"first tool":   body.Tools[0]["cache_control"],
		}
		for where, cc := range marks {
			want := on && where != "first tool"
			if got := cc != nil; got != want {
				t.Errorf("cache %v: cache_control on the %s = %v, want %v", on, where, cc, want)
			}
		}
	}
}
