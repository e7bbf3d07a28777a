package cassette_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/cassette"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/provider"
)

// rerecord is not golden.Update: it re-runs the cassette (against a local
// fake server) rather than rewriting a compared output, so it keeps its own
// name and `go test ./... -update` leaves the cassette alone.
var rerecord = flag.Bool("rerecord", false, "re-record testdata/example.jsonl against a local fake OpenAI server")

const (
	examplePath = "testdata/example.jsonl"
	exampleKey  = "sk-example-DO-NOT-LEAK-42"
)

// converse is a two-step generator loop: the model calls a tool, reads its
// result, answers. Recording and replay drive the same loop, so the replay
// sends exactly the requests that were recorded.
func converse(ctx context.Context, m model.Model) (string, error) {
	req := &model.Request{
		Context:  "You are the reporting assistant.\nSkills: weekly-report 1.2.0",
		Messages: []model.Message{{Role: model.User, Text: "How many rows did last week have?"}},
		Tools: []model.ToolDef{{Name: "fetch_sales", Description: "Sales rows for one ISO week.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"week":{"type":"string"}},"required":["week"]}`)}},
	}
	for step := 0; step < 4; step++ {
		req.Caller.Step = step
		resp, err := m.Generate(ctx, req)
		if err != nil {
			return "", err
		}
		if len(resp.Calls) == 0 {
			return resp.Text, nil
		}
		req.Messages = append(req.Messages, model.Message{Role: model.Assistant, Text: resp.Text, Calls: resp.Calls})
		for _, c := range resp.Calls {
			req.Messages = append(req.Messages, model.Message{Role: model.Tool, CallID: c.ID, Name: c.Name, Text: "12 rows"})
		}
	}
	return "", fmt.Errorf("no answer after 4 steps")
}

func recordExample(t *testing.T) {
	srv := fakeserver.New(
		fakeserver.Reply{Body: `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-test","choices":[{"index":0,"finish_reason":"tool_calls",
			"message":{"role":"assistant","content":"","tool_calls":[{"id":"call_w1","type":"function","function":{"name":"fetch_sales","arguments":"{\"week\":\"2025-W01\"}"}}]}}],
			"usage":{"prompt_tokens":61,"completion_tokens":18,"total_tokens":79}}`},
		fakeserver.Reply{Body: `{"id":"chatcmpl-2","object":"chat.completion","model":"gpt-test","choices":[{"index":0,"finish_reason":"stop",
			"message":{"role":"assistant","content":"Last week had 12 rows."}}],"usage":{"prompt_tokens":92,"completion_tokens":8,"total_tokens":100}}`},
	)
	defer srv.Close()
	env := map[string]string{"OPENAI_API_KEY": exampleKey, "OPENAI_BASE_URL": srv.URL + "/v1"}
	m, err := provider.New("openai/gpt-test", func(k string) string { return env[k] }, provider.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rec := cassette.NewRecorder(m, &buf, cassette.WithSecrets(exampleKey), cassette.WithMeta("model", "openai/gpt-test"))
	if _, err := converse(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(examplePath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestExampleReplaysOffline is what a skill's CI does: replay a cassette,
// no network, no key.
func TestExampleReplaysOffline(t *testing.T) {
	if *rerecord {
		recordExample(t)
	}
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatalf("%v (run go test ./model/cassette -rerecord)", err)
	}
	if bytes.Contains(data, []byte(exampleKey)) {
		t.Fatal("the cassette contains the API key")
	}
	rp, err := cassette.OpenReplayer(filepath.FromSlash(examplePath))
	if err != nil {
		t.Fatal(err)
	}
	got, err := converse(context.Background(), rp)
	if err != nil {
		t.Fatal(err)
	}
	if got != "Last week had 12 rows." {
		t.Errorf("answer = %q", got)
	}
	if u := rp.Unused(); len(u) > 0 {
		t.Errorf("unused exchanges: %v", u)
	}
	if rp.Meta()["model"] != "openai/gpt-test" {
		t.Errorf("meta = %v", rp.Meta())
	}
}

// A changed skill fails the replay at the first request that differs.
func ExampleReplayer() {
	rp, err := cassette.OpenReplayer("testdata/example.jsonl")
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &model.Request{
		Context:  "You are the reporting assistant.\nSkills: weekly-report 1.3.0",
		Messages: []model.Message{{Role: model.User, Text: "How many rows did last week have?"}},
	}
	_, err = rp.Generate(context.Background(), req)
	fmt.Println(err)
	// Output:
	// replay: host, step 0: replay diverged from the cassette: tools differ: missing fetch_sales (also differ: context)
}
