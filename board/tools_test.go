package board

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/golden"
	"github.com/fsdrun/fsd/model"
)

// TestToolSession replays what a coordinating model might send, mistakes
// included, and checks every answer against a golden file: each is a JSON
// object with ok first, and errors carry a code the model can act on.
func TestToolSession(t *testing.T) {
	noLeak(t)
	b := newBoard(t, Options{Roster: func() []string { return []string{"extractor", "summarizer"} }, MaxPending: 5})
	runner := func(ctx context.Context, t *Task, deps []DepResult) (string, error) {
		if t.Goal == "fail" {
			return "", errors.New("source offline")
		}
		return echo(ctx, t, deps)
	}
	calls := []struct{ name, args string }{
		{"addTask", `{"goal":"Collect rows","id":"rows","assignee":"extractor"}`},
		{"addTask", `{"goal":"Brief","assignee":"writer"}`},
		{"addTask", `{"goal":"Brief","assignee":"summarizer","deps":["rows"]}`},
		{"addTask", `{"goal":"x","deps":["nope"]}`},
		{"addTask", `{"goal":"x","id":"loop","deps":["loop"]}`},
		{"addTask", `{"goal":"x","id":"rows"}`},
		{"addTask", `{"goal":"fail"}`},
		{"addTask", `{"goal":"after the failure","deps":["t2"]}`},
		{"addTask", `{"goal":"spare"}`},
		{"addTask", `{"goal":"one too many"}`},
		{"addTask", `{"goal":42}`},
		{"addTask", `{"goal":"x","priority":1}`},
		{"addTask", `not json`},
		{"addTask", `{}`},
		{"cancelTask", `{"id":"t4"}`},
		{"cancelTask", `{"id":"ghost"}`},
		{"cancelTask", ``},
		{"listTasks", ``},
		{"runBoard", `{}`},
		{"runBoard", `null`},
		{"cancelTask", `{"id":"rows"}`},
		{"deleteTask", `{"id":"rows"}`},
	}
	var out strings.Builder
	for _, c := range calls {
		res := b.CallTool(context.Background(), c.name, json.RawMessage(c.args), runner)
		got := res.Text
		var v map[string]any
		if err := json.Unmarshal([]byte(got), &v); err != nil {
			t.Errorf("%s %s answered invalid JSON %q: %v", c.name, c.args, got, err)
		}
		checkTyped(t, res)
		if !strings.HasPrefix(got, `{"ok":`) {
			t.Errorf("answer does not start with ok: %s", got)
		}
		fmt.Fprintf(&out, "> %s %s\n%s\n", c.name, c.args, got)
	}
	golden.CheckString(t, filepath.Join("testdata", "tools.golden"), out.String())
}

func TestToolsSchemas(t *testing.T) {
	for _, d := range Tools() {
		var schema map[string]any
		if err := json.Unmarshal(d.Parameters, &schema); err != nil {
			t.Errorf("%s: parameters are not JSON: %v", d.Name, err)
		}
		if schema["type"] != "object" || d.Description == "" || !IsTool(d.Name) {
			t.Errorf("%s: bad definition %+v", d.Name, d)
		}
	}
	if IsTool("read_skill") {
		t.Error("read_skill is not a board tool")
	}
}

func TestRunBoardCancelled(t *testing.T) {
	b := newBoard(t, Options{})
	mustAdd(t, b, TaskSpec{ID: "a", Goal: "g"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := b.CallTool(ctx, ToolRunBoard, nil, echo)
	checkTyped(t, res)
	got := res.Text
	want := `{"ok":false,"error":"cancelled","message":"the run was cancelled: context canceled","status":"cancelled","tasks":[{"id":"a","agent":"worker","status":"pending"}]}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func FuzzCallTool(f *testing.F) {
	for _, s := range []string{`{"goal":"x"}`, `{"goal":"x","deps":["t1"]}`, `{"id":"t1"}`, `[]`, `{"goal":"x","id":""}`, "\x00"} {
		f.Add("addTask", s)
		f.Add("cancelTask", s)
	}
	f.Fuzz(func(t *testing.T, name, args string) {
		b := New(Options{})
		b.CallTool(context.Background(), ToolAddTask, json.RawMessage(`{"goal":"seed"}`), nil)
		res := b.CallTool(context.Background(), name, json.RawMessage(args), echo)
		if !json.Valid([]byte(res.Text)) {
			t.Fatalf("invalid JSON answer %q", res.Text)
		}
		checkTyped(t, res)
	})
}

// checkTyped asserts the typed result says what its text says: IsError
// exactly when ok is false, Code the text's error code, Fresh for runBoard.
func checkTyped(t *testing.T, res model.ToolResult) {
	t.Helper()
	var v struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(res.Text), &v); err != nil {
		t.Fatalf("answer %q: %v", res.Text, err)
	}
	if res.IsError == v.OK || res.Code != v.Error {
		t.Errorf("typed result {IsError %v, Code %q} disagrees with its text %s", res.IsError, res.Code, res.Text)
	}
}

// The addTask definition says the forms of each argument — assignee by
// name or skill/agent, deps, input — and what a worker sees; a model
// reads nothing else about them.
func TestAddTaskDefinition(t *testing.T) {
	d := Tools()[0]
	var params bytes.Buffer
	if err := json.Indent(&params, d.Parameters, "", "  "); err != nil {
		t.Fatal(err)
	}
	golden.CheckString(t, filepath.Join("testdata", "addtask.golden"), d.Name+"\n"+d.Description+"\n"+params.String()+"\n")
}
