package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
)

func connect(t *testing.T, run Runner, onProgress func(*mcp.ProgressNotificationParams)) *mcp.ClientSession {
	t.Helper()
	srv := NewServer(Options{Tool: "weekly", Description: "Runs weekly.", Run: run})
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { onProgress(r.Params) }}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// Board events become progress notifications whose progress only grows;
// the input reaches the run; a failed run is an isError result.
func TestCallProgressAndErrors(t *testing.T) {
	var mu sync.Mutex
	var got []mcp.ProgressNotificationParams
	var input string
	cs := connect(t, func(_ context.Context, in string, sink event.Sink) (string, error) {
		input = in
		for _, e := range []event.Event{
			{Type: event.TaskAdded, Task: "a"}, {Type: event.TaskAdded, Task: "b"},
			{Type: event.TaskStarted, Task: "a"}, {Type: event.TaskCompleted, Task: "a", Agent: "s/x"},
			{Type: event.TaskFailed, Task: "b"}, {Type: event.Text, Text: "ignored"},
		} {
			sink.Emit(e)
		}
		if in == "boom" {
			return "", errors.New("run failed: boom")
		}
		return "the answer", nil
	}, func(p *mcp.ProgressNotificationParams) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, *p)
	})
	params := &mcp.CallToolParams{Name: "weekly", Arguments: map[string]any{"input": "this week"}}
	params.SetProgressToken(7)
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || res.Content[0].(*mcp.TextContent).Text != "the answer" || input != "this week" {
		t.Errorf("result %+v, input %q", res, input)
	}
	for i := 0; i < 500; i++ { // notifications may trail the result: wait, boundedly
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 2 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	if len(got) != 2 || got[0].Progress != 1 || got[0].Total != 2 || got[0].Message != "task a (s/x) completed" ||
		got[1].Progress != 2 || got[1].Message != "task b failed" {
		t.Errorf("progress = %+v", got)
	}
	mu.Unlock()
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "weekly", Arguments: map[string]any{"input": "boom"}})
	if err != nil || !res.IsError || res.Content[0].(*mcp.TextContent).Text != "run failed: boom" {
		t.Errorf("failed run: %v %+v", err, res)
	}
}

func TestToolName(t *testing.T) {
	for in, want := range map[string]string{"market-fanout": "market-fanout", "Weekly report": "Weekly_report", "  ": "run_workflow", "über": "ber"} {
		if got := ToolName(in); got != want {
			t.Errorf("ToolName(%q) = %q, want %q", in, got, want)
		}
	}
}

// A call waiting for approval, with a client that takes no elicitation,
// is named in a progress message with the fsd approve line; the typed
// results and the run's id make the structured result.
//
// P6, P8: the client hears how to answer; typed results are structured.
func TestApprovalWithoutElicitationSaysFsdApprove(t *testing.T) {
	var mu sync.Mutex
	var got []string
	heard := make(chan struct{})
	var once sync.Once
	cs := connect(t, func(ctx context.Context, _ string, sink event.Sink) (string, error) {
		BindAnswer(ctx, func(runrecord.Answer) error { return nil })
		sink.Emit(event.Event{Type: event.RunStarted, Run: "r1"})
		sink.Emit(event.Event{Type: event.ApprovalRequested, Run: "r1", Task: "ship", Agent: "release/shipper", Tool: "publish", Approval: "task:ship/s1/c1"})
		sink.Emit(event.Event{Type: event.TaskCompleted, Run: "r1", Task: "notes", Output: json.RawMessage(`{"version":"1.4.0"}`)})
		// As a run does, the call waits while its approval is asked.
		select {
		case <-heard:
		case <-time.After(10 * time.Second):
		}
		return "shipped", nil
	}, func(p *mcp.ProgressNotificationParams) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p.Message)
		if strings.HasPrefix(p.Message, "waiting for approval") {
			once.Do(func() { close(heard) })
		}
	})
	params := &mcp.CallToolParams{Name: "weekly", Arguments: map[string]any{}}
	params.SetProgressToken("t")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if string(b) != `{"answer":"shipped","run":"r1","tasks":{"notes":{"version":"1.4.0"}}}` {
		t.Errorf("structured content = %s", b)
	}
	want := "waiting for approval: task ship (release/shipper) calls publish; answer with: fsd approve r1 task:ship/s1/c1 [--edit JSON | --reject REASON]"
	for i := 0; i < 500; i++ { // notifications may trail the result: wait, boundedly
		mu.Lock()
		found := strings.Join(got, "\n")
		mu.Unlock()
		if strings.Contains(found, want) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Errorf("progress messages = %q, want %q", got, want)
}

// Arguments the input schema refuses (a number for input, a key it does
// not have) are an isError result the model can read, and no run starts.
func TestBadArgumentsAreARefusal(t *testing.T) {
	ran := false
	cs := connect(t, func(context.Context, string, event.Sink) (string, error) { ran = true; return "ran", nil }, func(*mcp.ProgressNotificationParams) {})
	for _, args := range []map[string]any{{"input": 5}, {"input": "hi", "extra": 1}} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "weekly", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.Content)
		if !res.IsError || strings.Contains(string(b), "Go struct") {
			t.Errorf("arguments %v: isError %v, %s; want a readable refusal", args, res.IsError, b)
		}
	}
	if ran {
		t.Error("a run started on arguments the schema refuses")
	}
}

// Arguments that are not an object, or an input that is not a string,
// are refused in words: what they are and what was wanted.
func TestArgumentKindsAreNamed(t *testing.T) {
	cs := connect(t, func(context.Context, string, event.Sink) (string, error) { return "ran", nil }, func(*mcp.ProgressNotificationParams) {})
	for _, c := range []struct {
		args any
		want string
	}{
		{[]any{1}, `arguments must be {"input": "..."}: the arguments are an array, want an object`},
		{"text", `arguments must be {"input": "..."}: the arguments are a string, want an object`},
		{map[string]any{"input": []any{"a"}}, `arguments must be {"input": "..."}: input is an array, want a string`},
		{map[string]any{"input": 5}, `arguments must be {"input": "..."}: input is a number, want a string`},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "weekly", Arguments: c.args})
		if err != nil {
			t.Fatal(err)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || text != c.want {
			t.Errorf("arguments %v: %q (isError %v), want %q", c.args, text, res.IsError, c.want)
		}
	}
}
