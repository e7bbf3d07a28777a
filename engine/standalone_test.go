package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// The seeds' fork-like generator, in Go: inherit the last 8 whole turns,
// stream items to the client, keep them out of the parent's history, and
// return only the answer.
func ExampleGenerate() {
	parent := []model.Message{
		{Role: model.User, Text: "We agreed to ship on Friday."},
		{Role: model.Assistant, Text: "Noted: Friday."},
	}
	// A model stand-in that summarizes whatever conversation it was given.
	summarizer := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Text: fmt.Sprintf("Brief: %d messages inherited; the plan is to ship on Friday.", len(req.Messages)-1)}, nil
	})
	answer, err := engine.Generate(context.Background(), engine.GeneratorConfig{
		Name:         "summarizer",
		Model:        summarizer,
		Prompt:       "Summarize the discussion into a short brief.",
		History:      parent,
		HistoryTurns: 8,
		Visibility:   spec.Visibility{Client: true, History: false},
	}, "Write the brief.")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(answer)
	// Output: Brief: 2 messages inherited; the plan is to ship on Friday.
}

func TestGenerateToolsTurnsAndVisibility(t *testing.T) {
	testpar.UnlessRace(t)
	var parent []model.Message
	for i := 1; i <= 5; i++ {
		parent = append(parent, model.Message{Role: model.User, Text: fmt.Sprintf("turn %d", i)},
			model.Message{Role: model.Assistant, Text: "ok"})
	}
	var seen []model.Request
	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		seen = append(seen, *req)
		if req.Caller.Step == 0 {
			return &model.Response{Calls: []model.ToolCall{
				{ID: "1", Name: "add", Args: json.RawMessage(`{"a":2,"b":3}`)},
				{ID: "2", Name: "boom"},
				{ID: "3", Name: "nope"},
			}}, nil
		}
		return &model.Response{Text: "done"}, nil
	})
	rec := &event.Recorder{}
	var history []model.Message
	answer, err := engine.Generate(context.Background(), engine.GeneratorConfig{
		Name: "calc", Model: m, Prompt: "P", History: parent, HistoryTurns: 2,
		Visibility: spec.VisibilityPrimary, Sink: rec, Parent: func(msg model.Message) { history = append(history, msg) },
		Tools: []engine.FuncTool{
			{Def: model.ToolDef{Name: "add", Parameters: json.RawMessage(`{"type":"object"}`)}, Run: func(_ context.Context, a json.RawMessage) (string, error) {
				var x struct{ A, B int }
				_ = json.Unmarshal(a, &x)
				return fmt.Sprint(x.A + x.B), nil
			}},
			{Def: model.ToolDef{Name: "boom", Parameters: json.RawMessage(`{"type":"object"}`)}, Run: func(context.Context, json.RawMessage) (string, error) {
				panic("tool bug")
			}},
		},
	}, "compute")
	if err != nil || answer != "done" {
		t.Fatalf("answer %q, err %v", answer, err)
	}
	first := seen[0]
	if first.Context != "P" || len(first.Messages) != 5 || first.Messages[0].Text != "turn 4" {
		t.Errorf("first request: context %q, messages %+v", first.Context, first.Messages)
	}
	var results []string
	for _, msg := range seen[1].Messages {
		if msg.Role == model.Tool {
			results = append(results, fmt.Sprintf("%s:%v:%s", msg.Name, msg.IsError, msg.Text))
		}
	}
	want := []string{"add:false:5", "boom:true:tool boom failed: tool bug", "nope:true:Unknown tool: nope"}
	if strings.Join(results, "|") != strings.Join(want, "|") {
		t.Errorf("results = %q", results)
	}
	if len(history) != 5 { // the call message, three results, the answer
		t.Errorf("history got %d items", len(history))
	}
	if evs := rec.Events(); len(evs) == 0 || evs[0].Agent != "calc" {
		t.Errorf("client events = %+v", evs)
	}
}
