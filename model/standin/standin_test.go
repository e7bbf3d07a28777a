package standin

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/fsdrun/fsd/model"
)

// Choose reads the entry sharing the most content words with the query,
// at the cut-off or more; one short of it on even seeds only; none below.
func TestChoose(t *testing.T) {
	entries := []Entry{
		{ID: "greeter", Description: "Greets people by name. Use when asked to say hello."},
		{ID: "report", Description: "Writes the weekly status report."},
	}
	for _, tc := range []struct {
		query string
		seed  int
		want  string
	}{
		{"say hello to Ada", 1, "greeter"},          // say, hello
		{"the weekly status report", 1, "report"},   // weekly, status, report
		{"hello there", 0, "greeter"},               // one word: a near miss, even seed
		{"hello there", 1, ""},                      // odd seed
		{"what is the time", 0, ""},                 // nothing shared
		{"The Weekly STATUS, please!", 1, "report"}, // case and punctuation ignored
	} {
		if got := New(tc.seed).Choose(tc.query, entries); got != tc.want {
			t.Errorf("Choose(%q, seed %d) = %q, want %q", tc.query, tc.seed, got, tc.want)
		}
	}
}

// The host reads, then calls the tools the query names, then answers the
// last result; a judge passes a rubric whose quoted terms the answer has.
func TestGenerate(t *testing.T) {
	m := New(0)
	ctx := context.Background()
	req := &model.Request{
		Context:  "<catalog>\n- id: greeter\n  name: Greeter\n  description: Greets people; say hello.\n</catalog>\n",
		Messages: []model.Message{{Role: model.User, Text: "say hello and greet Ada"}},
		Tools:    []model.ToolDef{{Name: "greet", Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}},
	}
	resp, _ := m.Generate(ctx, req)
	if len(resp.Calls) != 1 || resp.Calls[0].Name != "read_skill" || string(resp.Calls[0].Args) != `{"id":"greeter"}` {
		t.Fatalf("step 0: %+v, want read_skill greeter", resp)
	}
	req.Messages = append(req.Messages, model.Message{Role: model.Assistant, Calls: resp.Calls},
		model.Message{Role: model.Tool, CallID: "c0", Name: "read_skill", Text: "{}"})
	resp, _ = m.Generate(ctx, req)
	if len(resp.Calls) != 1 || resp.Calls[0].Name != "greet" || string(resp.Calls[0].Args) != `{"name":"Ada"}` {
		t.Fatalf("step 1: %+v, want greet Ada", resp)
	}
	req.Messages = append(req.Messages, model.Message{Role: model.Assistant, Calls: resp.Calls},
		model.Message{Role: model.Tool, CallID: "c1", Name: "greet", Text: "Hello, Ada!"})
	if resp, _ = m.Generate(ctx, req); resp.Text != "Hello, Ada!" || resp.Usage.InputTokens == 0 {
		t.Fatalf("step 2: %+v, want the tool's result as the answer, with usage", resp)
	}
	for rubric, want := range map[string]bool{`Greets "Ada".`: true, `Greets "Grace".`: false} {
		j := &model.Request{Output: &model.Output{Schema: json.RawMessage(`{"properties":{"passed":{},"evidence":{}}}`)},
			Messages: []model.Message{{Role: model.User, Text: "<rubric>\n" + rubric + "\n</rubric>\n\n<answer>\nHello, Ada!\n</answer>\n"}}}
		resp, _ := m.Generate(ctx, j)
		var v struct{ Passed bool }
		if err := json.Unmarshal([]byte(resp.Text), &v); err != nil || v.Passed != want {
			t.Errorf("judge %q: %s, want passed %v", rubric, resp.Text, want)
		}
	}
}
