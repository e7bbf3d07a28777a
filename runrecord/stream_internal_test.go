package runrecord

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/model"
)

// callHead reads of a request or response line what decoding it reads,
// or says it cannot: on lines as the writer writes them, and on lines
// written otherwise.
func TestCallHeadIsDecode(t *testing.T) {
	usage := &model.Usage{InputTokens: 12, OutputTokens: 3, CachedInputTokens: 4, Estimated: true}
	held := &model.Usage{InputTokens: 99, OutputTokens: 7}
	lines := [][]byte{
		[]byte(`{"kind":"request","gen":"tasks/a\"b.jsonl","step":1,"at":0}`),
		[]byte(`{"step":2,"kind":"response","gen":"x","usage":{"input_tokens":1,"output_tokens":2}}`),
		[]byte(`{"kind":"response","gen":"g","step":0,"at":3,"usage":{"input_tokens":1,"output_tokens":2},"cost":1e-3,"error":"\"usage\":{}"}`),
		[]byte(`{"kind":"response","gen":"g","step":4,"at":3,"usage":null}`),
	}
	for _, l := range []Line{
		{Kind: KindRequest, Gen: "tasks/t1.jsonl", Task: "t1", Agent: "fan/worker", Step: 3, Context: "h", Window: nil, At: 2, Held: held},
		{Kind: KindRequest, Gen: "transcript.jsonl", Step: 0, Status: `"usage":{"input_tokens":5}`},
		{Kind: KindResponse, Gen: "tasks/t1.jsonl", Task: "t1", Agent: "a", Step: 12, At: 5, Held: held, Usage: usage, Cost: 0.0125},
		{Kind: KindResponse, Gen: "tasks/é.jsonl", Task: "é", Step: 1, Usage: usage, Error: `cost ,"cost":9}`},
		{Kind: KindResponse, Gen: "host", Step: 0},
		{Kind: KindBlob, Hash: "h1"},
	} {
		lines = append(lines, appendLineJSON(nil, &l))
	}
	fast := 0
	for _, b := range lines {
		var want lineHead
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		got, ok := callHead(b)
		if !ok {
			continue
		}
		fast++
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: (-decoded +read):\n%s", b, d)
		}
	}
	if fast < 5 {
		t.Errorf("%d of %d lines read from their bytes, want the writer's five at least", fast, len(lines))
	}
}
