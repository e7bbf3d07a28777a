package providertest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
)

// png is a 1x1 PNG: the smallest image a request can carry.
var png = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// Variants are requests that together reach every part of a request body
// a client can produce: the conversation with and without caching,
// streamed, with a typed output that fits strict decoding, one that does
// not and one whose root is not an object, images on a user message and a
// tool result, an empty tool result and assistant turns of calls alone or
// text alone, and a request of nothing but one user line.
func Variants(p Provider) map[string]*model.Request {
	v := map[string]*model.Request{}
	add := func(name string, edit func(r *model.Request)) {
		r := p.Request()
		edit(r)
		v[name] = r
	}
	add("conversation", func(*model.Request) {})
	add("cached", func(r *model.Request) { r.Cache, r.CacheKey = true, "fsd/run/task:t1" })
	add("streamed", func(r *model.Request) { r.OnText = func(string) {} })
	add("streamed and cached", func(r *model.Request) {
		r.OnText, r.Cache, r.CacheKey = func(string) {}, true, "fsd/run/host"
	})
	add("typed output, strict", func(r *model.Request) {
		r.Output = &model.Output{Name: "report card", Schema: json.RawMessage(
			`{"type":"object","properties":{"grade":{"type":"string","enum":["A","B"]}},"required":["grade"],"additionalProperties":false}`)}
	})
	add("typed output, not strict", func(r *model.Request) {
		r.Output = &model.Output{Name: "summary", Schema: json.RawMessage(
			`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"patternProperties":{"^x-":{}}}`)}
	})
	add("typed output, not an object", func(r *model.Request) {
		r.Output = &model.Output{Name: "list", Schema: json.RawMessage(`{"type":"array","items":{"type":"string"}}`)}
	})
	add("images", func(r *model.Request) {
		img := []model.Media{{MIME: "image/png", Data: png}}
		r.Messages[0].Media = img
		r.Messages[2].Media = img
	})
	add("edges", func(r *model.Request) {
		r.Messages = append(r.Messages,
			model.Message{Role: model.Assistant, Calls: []model.ToolCall{{ID: r.Messages[1].Calls[0].ID + "x", Name: "listTasks"}}},
			model.Message{Role: model.Tool, CallID: r.Messages[1].Calls[0].ID + "x", Name: "listTasks"},
			model.Message{Role: model.Context, Text: "Skill weekly-report loaded."},
			model.Message{Role: model.Assistant, Text: "Done."},
			model.Message{Role: model.User, Text: "Thanks."})
	})
	add("bounded", func(r *model.Request) { r.MaxTokens = 100 })
	add("bare", func(r *model.Request) {
		r.Context, r.Tools = "", nil
		r.Messages = []model.Message{{Role: model.User, Text: "hi"}}
	})
	return v
}

// Bodies sends each of Variants to a server answering OKBody (OKStream
// when streamed) and returns the request bodies the server received, by
// variant name.
func (p Provider) Bodies(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for name, req := range Variants(p) {
		reply := fakeserver.Reply{Body: p.OKBody}
		if req.OnText != nil {
			reply = fakeserver.Reply{Body: p.OKStream, Header: SSE}
		}
		srv := fakeserver.New(reply)
		if _, err := p.Model(t, srv).Generate(context.Background(), req); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if rs := srv.Requests(); len(rs) > 0 {
			out[name] = rs[0].Body
		}
		srv.Close()
	}
	return out
}

// Bound checks that a request's MaxTokens reaches the wire as the bound
// on the answer (field reads it from the body, nil when absent) and that
// the response reports it: a call under an output budget asks for no more
// than the engine reserved for it.
func (p Provider) Bound(t *testing.T, field func(body map[string]any) any) {
	t.Helper()
	req := p.Request()
	req.MaxTokens = 100
	resp, sent := p.Call(t, fakeserver.Reply{Body: p.OKBody}, req)
	var body map[string]any
	if err := json.Unmarshal(sent, &body); err != nil {
		t.Fatal(err)
	}
	if got := field(body); got != float64(100) {
		t.Errorf("bound sent %v, want 100", got)
	}
	if resp.MaxTokens != 100 {
		t.Errorf("response reports a bound of %d, want 100", resp.MaxTokens)
	}
}
