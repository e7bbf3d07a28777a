package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/fsdrun/fsd/internal/mcptest"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tool"
)

// everything acquires the reference server's tools (run unconfined: node
// reads its packages from the test cache), with dir as the run's
// workspace.
func everything(t *testing.T, dir string, spool Spooler) map[string]*Tool {
	t.Helper()
	argv := mcptest.Everything(t)
	s := &spec.Skill{ID: "ref", Version: "1.0.0", Dir: t.TempDir(), MCP: []spec.MCPServer{{Name: "everything", Command: argv}}}
	p := NewPool(Options{Sandbox: unconfined, Spool: spool, Workspace: func() string { return dir }})
	t.Cleanup(p.Close)
	tools, notes := p.Acquire(context.Background(), s)
	if len(notes) > 0 {
		t.Fatalf("notes: %v", notes)
	}
	return byName(tools)
}

func TestEverythingProgressReachesTheCall(t *testing.T) {
	testpar.UnlessRace(t)
	ts := everything(t, "", nil)
	var mu sync.Mutex
	var got []tool.Progress
	ctx := tool.WithHooks(context.Background(), tool.Hooks{Progress: func(p tool.Progress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}})
	res := ts["trigger-long-running-operation"].Call(ctx, json.RawMessage(`{"duration":0.3,"steps":3}`), nil)
	if res.IsError || !strings.Contains(res.Text, "completed") {
		t.Fatalf("result: %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || got[0].Done != 1 || got[2].Done != 3 || got[2].Total != 3 {
		t.Fatalf("progress: %+v, want 1/3, 2/3, 3/3", got)
	}
}

func TestEverythingImageIsMediaAndArtifact(t *testing.T) {
	testpar.UnlessRace(t)
	sp := &fakeSpool{}
	ts := everything(t, "", sp)
	var media []model.Media
	ctx := tool.WithHooks(context.Background(), tool.Hooks{Media: func(m []model.Media) { media = m }})
	res := ts["get-tiny-image"].Call(ctx, json.RawMessage(`{}`), nil)
	if res.IsError || !strings.Contains(res.Text, "image (image/png") || !strings.Contains(res.Text, "kept as artifact h_1") {
		t.Fatalf("result: %+v", res)
	}
	if len(media) != 1 || media[0].MIME != "image/png" || !bytes.Equal(media[0].Data, sp.kept["h_1"]) ||
		!bytes.HasPrefix(media[0].Data, []byte("\x89PNG")) {
		t.Fatalf("media: %d parts, want the PNG kept as h_1", len(media))
	}
}

func TestEverythingResourceLinksAreRead(t *testing.T) {
	testpar.UnlessRace(t)
	sp := &fakeSpool{}
	ts := everything(t, "", sp)
	res := call(ts["get-resource-links"], `{"count":2}`)
	if res.IsError {
		t.Fatalf("result: %+v", res)
	}
	// Resource 1 is a blob, 2 a text resource: both read and kept.
	if strings.Count(res.Text, "kept as artifact") != 2 || !strings.Contains(res.Text, "resource link Text Resource 2 (") {
		t.Fatalf("result: %s", res.Text)
	}
	if len(sp.kept) != 2 || !strings.Contains(string(sp.kept["h_2"]), "2") {
		t.Fatalf("kept: %q", sp.kept)
	}
}

func TestEverythingRootsAreTheWorkspace(t *testing.T) {
	testpar.UnlessRace(t)
	dir := t.TempDir()
	ts := everything(t, dir, nil)
	roots, ok := ts["get-roots-list"]
	if !ok {
		t.Fatal("the server does not offer get-roots-list: fsd did not declare roots")
	}
	res := call(roots, `{}`)
	if res.IsError || !strings.Contains(res.Text, "URI: file://"+dir) || !strings.Contains(res.Text, "1 total") {
		t.Fatalf("result: %s", res.Text)
	}
}

// The reference server's elicitation request reaches the call's Ask hook
// with its message and form, and the server reads the answer.
//
// P5: a server's question reaches the person running the call.
func TestEverythingElicitationReachesAsk(t *testing.T) {
	testpar.UnlessRace(t)
	ts := everything(t, "", nil)
	var q tool.Question
	ctx := tool.WithHooks(context.Background(), tool.Hooks{Ask: func(_ context.Context, question tool.Question) (tool.Answer, error) {
		q = question
		return tool.Answer{Action: "decline"}, nil
	}})
	res := ts["trigger-elicitation-request"].Call(ctx, json.RawMessage(`{}`), nil)
	if res.IsError || !strings.Contains(strings.ToLower(res.Text), "decline") {
		t.Fatalf("result: %+v", res)
	}
	if q.Message != "Please provide inputs for the following fields:" || !strings.Contains(string(q.Schema), `"firstLine"`) {
		t.Fatalf("question: %+v", q)
	}
}

// The reference server's sampling request reaches the call's Sample hook
// with its prompt, and the server reads the model's answer.
//
// P9: a server's completion comes from the run's model.
func TestEverythingSamplingReachesSample(t *testing.T) {
	testpar.UnlessRace(t)
	ts := everything(t, "", nil)
	var asked *model.Request
	ctx := tool.WithHooks(context.Background(), tool.Hooks{Sample: func(_ context.Context, req *model.Request) (*model.Response, error) {
		asked = req
		return &model.Response{Text: "forty-two", Model: "scripted"}, nil
	}})
	res := ts["trigger-sampling-request"].Call(ctx, json.RawMessage(`{"prompt":"six times seven?"}`), nil)
	if res.IsError || !strings.Contains(res.Text, "forty-two") {
		t.Fatalf("result: %+v", res)
	}
	if asked == nil || len(asked.Messages) != 1 || !strings.Contains(asked.Messages[0].Text, "six times seven?") {
		t.Fatalf("request: %+v", asked)
	}
}

// The reference server's task-based tool (execution.taskSupport
// "required") is called as a task: its stages reach the call as progress,
// and the call answers with the task's report.
//
// P10: a tool that requires a task is called as one.
func TestEverythingTaskTool(t *testing.T) {
	testpar.UnlessRace(t)
	ts := everything(t, "", nil)
	var pr progressOf
	res := ts["simulate-research-query"].Call(tool.WithHooks(context.Background(), pr.hooks()), json.RawMessage(`{"topic":"tides"}`), nil)
	if res.IsError || !strings.Contains(res.Text, "# Research Report: tides") {
		t.Fatalf("result: %+v", res)
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for i, done := range pr.done {
		if done != float64(i+1) {
			t.Errorf("report %d is numbered %v", i+1, done)
		}
	}
	if n := len(pr.msgs); n < 2 || !strings.HasPrefix(pr.msgs[0], "task working") || !strings.HasPrefix(pr.msgs[n-1], "task completed") {
		t.Fatalf("progress: %q, want working ... completed", pr.msgs)
	}
}

// An ambiguous query makes the reference server's task ask for a
// clarification while it waits in input_required; the question reaches
// the call's Ask hook during tasks/result and the report reads the answer.
func TestEverythingTaskAsks(t *testing.T) {
	testpar.UnlessRace(t)
	ts := everything(t, "", nil)
	var q tool.Question
	ctx := tool.WithHooks(context.Background(), tool.Hooks{Ask: func(_ context.Context, question tool.Question) (tool.Answer, error) {
		q = question
		return tool.Answer{Action: "accept", Content: map[string]any{"interpretation": "historical"}}, nil
	}})
	res := ts["simulate-research-query"].Call(ctx, json.RawMessage(`{"topic":"tides","ambiguous":true}`), nil)
	if res.IsError || !strings.Contains(res.Text, "# Research Report: tides (historical)") {
		t.Fatalf("result: %+v", res)
	}
	if !strings.Contains(q.Message, `"tides" could have multiple interpretations`) {
		t.Fatalf("question: %+v", q)
	}
}
