package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// countSchema is the output schema of the typed agent in these tests.
var countSchema = map[string]any{
	"type":     "object",
	"required": []any{"total", "items"},
	"properties": map[string]any{
		"total": map[string]any{"type": "integer", "minimum": 0},
		"items": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	},
}

// typedProject is a pipeline: collect (a typed agent) feeds report,
// whose goal is a template over collect's fields.
func typedProject(repairs *int) *spec.Project {
	s := skill("stats", "1.0.0", spec.ChannelInline)
	s.Agents = []spec.Agent{
		{Name: "collector", Prompt: "COLLECT", Visibility: spec.VisibilitySub, Output: countSchema, OutputRepairs: repairs},
		{Name: "reporter", Prompt: "REPORT", Visibility: spec.VisibilitySub},
	}
	p := project(s)
	p.Workflow.Host = nil
	p.Workflow.Input = "count the things"
	p.Workflow.Tasks = []spec.Task{
		{ID: "collect", Goal: "Count for: {{.Input}}", Assignee: "stats/collector"},
		{ID: "report", Goal: "Report {{.Deps.collect.total}} items, first {{index .Deps.collect.items 0}}", Assignee: "stats/reporter", Deps: []string{"collect"},
			Input: "all: {{json .Deps.collect}}"},
	}
	return p
}

func taskEvent(evs []event.Event, typ, task string) (event.Event, bool) {
	for _, e := range evs {
		if e.Type == typ && e.Task == task {
			return e, true
		}
	}
	return event.Event{}, false
}

// Typed results, first time right: the schema rides on the request and in
// the worker's context; the dependent receives the JSON compactly, its
// goal and input templates reach the fields, and the event, board.json and
// the dependent's Caller.Deps carry the JSON, not a string of it.
func TestTypedOutputValidFirstTime(t *testing.T) {
	testpar.UnlessRace(t)
	dir := t.TempDir()
	res, m, evs, err := runMulti(t, typedProject(nil), Options{RunsDir: dir}, map[string][]step{
		"collector": {say("```json\n{\"total\": 3,\n \"items\": [\"a\", \"b\", \"c\"]}\n```")},
		"reporter":  {say("three things")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "three things" {
		t.Errorf("answer = %q", res.Answer)
	}
	creq := m.requests("collector")[0]
	if creq.Output == nil || !strings.Contains(string(creq.Output.Schema), `"total"`) || creq.Output.Name != "collector" {
		t.Errorf("collector's request carries output %+v", creq.Output)
	}
	if !strings.Contains(creq.Context, "<output-schema>") || !strings.Contains(creq.Context, `"required":["total","items"]`) {
		t.Errorf("collector's context does not state the schema:\n%s", creq.Context)
	}
	if got := creq.Caller.TaskGoal; got != "Count for: count the things" {
		t.Errorf("collect's goal rendered %q", got)
	}
	rreq := m.requests("reporter")[0]
	if rreq.Output != nil {
		t.Errorf("an untyped agent's request carries output %+v", rreq.Output)
	}
	const compact = `{"total":3,"items":["a","b","c"]}`
	msg := rreq.Messages[len(rreq.Messages)-1].Text
	for _, want := range []string{"Task report: Report 3 items, first a\n", "Input:\nall: {\"items\":[\"a\",\"b\",\"c\"],\"total\":3}", "Result of task collect (stats/collector):\n" + compact + "\n"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the reporter's task message lacks %q:\n%s", want, msg)
		}
	}
	if got := string(rreq.Caller.Deps["collect"]); got != compact {
		t.Errorf("Caller.Deps[collect] = %s", got)
	}
	e, ok := taskEvent(evs, event.TaskCompleted, "collect")
	if !ok || string(e.Output) != compact || e.Result != "" {
		t.Errorf("task.completed of collect: output %s, result %q", e.Output, e.Result)
	}
	if e, _ := taskEvent(evs, event.TaskCompleted, "report"); e.Result != "three things" || e.Output != nil {
		t.Errorf("task.completed of report: output %s, result %q", e.Output, e.Result)
	}
	// board.json keeps the JSON as JSON, once.
	b := readFile(t, filepath.Join(dir, res.RunID, "board.json"))
	var snap struct {
		Tasks []map[string]json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal(b, &snap); err != nil {
		t.Fatal(err)
	}
	if out := snap.Tasks[0]["output"]; !jsonEqual(out, compact) || snap.Tasks[0]["result"] != nil {
		t.Errorf("board.json task: output %s, result %s", out, snap.Tasks[0]["result"])
	}
	// Read back, the task has its result as text again.
	var backs struct{ Tasks []board.Task }
	if err := json.Unmarshal(b, &backs); err != nil {
		t.Fatal(err)
	}
	if back := backs.Tasks[0]; back.Result != compact || string(back.Output) != compact {
		t.Errorf("board.json read back: result %q, output %s", back.Result, back.Output)
	}
}

// An answer that does not match gets a repair turn with the violations;
// the repaired answer is the result.
func TestTypedOutputRepaired(t *testing.T) {
	testpar.UnlessRace(t)
	_, m, evs, err := runMulti(t, typedProject(nil), Options{}, map[string][]step{
		"collector": {say(`{"total": "3", "items": []}`), say(`Here it is: {"total": 3}`), say(`{"total": 3, "items": ["x"]}`)},
		"reporter":  {say("ok")},
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests("collector")
	if len(reqs) != 3 {
		t.Fatalf("the collector was asked %d times, want 3", len(reqs))
	}
	first := reqs[1].Messages[len(reqs[1].Messages)-1]
	if first.Role != model.User || !strings.Contains(first.Text, "at /total: got string, want integer") || !strings.Contains(first.Text, "repair turn 1 of 2") {
		t.Errorf("first repair message: %+v", first)
	}
	second := reqs[2].Messages[len(reqs[2].Messages)-1]
	if !strings.Contains(second.Text, "not JSON") || !strings.Contains(second.Text, "repair turn 2 of 2") {
		t.Errorf("second repair message: %+v", second)
	}
	if e, ok := taskEvent(evs, event.TaskCompleted, "collect"); !ok || string(e.Output) != `{"total":3,"items":["x"]}` {
		t.Errorf("collect completed with %s", e.Output)
	}
}

// Beyond the repair bound the task fails, softly: its error lists the
// violations, the run says which task, and the model was asked exactly
// 1 + output-repairs times.
func TestTypedOutputBeyondRepairs(t *testing.T) {
	testpar.UnlessRace(t)
	one := 1
	_, m, evs, err := runMulti(t, typedProject(&one), Options{}, map[string][]step{
		"collector": {say(`{"total": -1, "items": []}`), say(`{"items": [1]}`), say(`{"total": 1, "items": []}`)},
		"reporter":  {say("never")},
	})
	if err == nil || !strings.Contains(err.Error(), "task collect failed") {
		t.Fatalf("err = %v", err)
	}
	if n := len(m.requests("collector")); n != 2 {
		t.Errorf("the collector was asked %d times, want 2 (one repair turn)", n)
	}
	e, ok := taskEvent(evs, event.TaskFailed, "collect")
	if !ok {
		t.Fatal("no task.failed for collect")
	}
	for _, want := range []string{ErrOutput.Error(), "after 1 repair turns", "at /: missing property 'total'", "at /items/0: got number, want string"} {
		if !strings.Contains(e.Err, want) {
			t.Errorf("task.failed err lacks %q:\n%s", want, e.Err)
		}
	}
	if len(m.requests("reporter")) != 0 {
		t.Error("the dependent ran after its dependency failed")
	}
	if !errors.Is(err, ErrOutput) && !strings.Contains(err.Error(), "output schema") {
		t.Errorf("the run's error does not say why: %v", err)
	}
}

// With output-repairs 0 the first wrong answer fails the task.
func TestTypedOutputNoRepairs(t *testing.T) {
	testpar.UnlessRace(t)
	zero := 0
	_, m, _, err := runMulti(t, typedProject(&zero), Options{}, map[string][]step{
		"collector": {say(`not json`), say(`{"total": 1, "items": []}`)},
	})
	if err == nil || !strings.Contains(err.Error(), "after 0 repair turns") {
		t.Errorf("err = %v", err)
	}
	if n := len(m.requests("collector")); n != 1 {
		t.Errorf("asked %d times, want 1", n)
	}
}

// A goal template that reads a missing field fails the dependent with
// the template's error, not with a goal of "<no value>".
func TestTaskTemplateMissingField(t *testing.T) {
	testpar.UnlessRace(t)
	p := typedProject(nil)
	p.Workflow.Tasks[1].Goal = "Report {{.Deps.collect.count}}"
	_, _, evs, err := runMulti(t, p, Options{}, map[string][]step{
		"collector": {say(`{"total": 3, "items": ["a"]}`)},
		"reporter":  {say("never")},
	})
	if err == nil {
		t.Fatal("the run succeeded")
	}
	e, _ := taskEvent(evs, event.TaskFailed, "report")
	if !strings.Contains(e.Err, `"count"`) {
		t.Errorf("task.failed err = %q", e.Err)
	}
}

func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// A run stopped after a repair turn resumes without asking the model
// again for the journaled wrong answer: the replay judges it the same way,
// restates the same repair message, and goes on live from there.
func TestTypedOutputResume(t *testing.T) {
	p := typedProject(nil)
	down := errors.New("503 service unavailable")
	first := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.TaskID == "collect" && req.Caller.Step == 0 {
			return &model.Response{Text: `{"total": "3", "items": []}`}, nil
		}
		return nil, down
	})
	runs := t.TempDir()
	r, err := New(p, Options{Model: first, RunsDir: runs})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), "")
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("first run: %v", err)
	}
	j, err := LoadReplay(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var steps []string
	second := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		steps = append(steps, fmt.Sprintf("%s/%d", req.Caller.TaskID, req.Caller.Step))
		if req.Caller.TaskID == "collect" {
			last := req.Messages[len(req.Messages)-1]
			if last.Role != model.User || !strings.Contains(last.Text, "repair turn 1 of 2") {
				t.Errorf("the resumed collector's window ends with %+v, want the repair message", last)
			}
			return &model.Response{Text: `{"total": 3, "items": ["z"]}`}, nil
		}
		return &model.Response{Text: "report: " + req.Caller.TaskGoal}, nil
	})
	r2, err := New(p, Options{Model: second, Resume: j})
	if err != nil {
		t.Fatal(err)
	}
	res2, err := r2.Execute(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if res2.Answer != "report: Report 3 items, first z" {
		t.Errorf("answer %q", res2.Answer)
	}
	if got := strings.Join(steps, " "); got != "collect/1 report/0" {
		t.Errorf("model calls on resume: %s, want collect/1 report/0", got)
	}
	tr := readFile(t, filepath.Join(res.Dir, "journal.jsonl"))
	if n := strings.Count(string(tr), "repair turn 1 of 2"); n != 1 {
		t.Errorf("the repair message is in the journal %d times, want once", n)
	}
}

// In a conversation the host reads a typed task's result as JSON in the
// runBoard result (output, not a string of it), and a goal the host wrote
// is not a template.
func TestTypedOutputForTheHost(t *testing.T) {
	testpar.UnlessRace(t)
	p := typedProject(nil)
	p.Workflow.Tasks = nil
	p.Workflow.Host = &spec.Host{Prompt: "HOST"}
	var board string
	_, m, _, err := runMulti(t, p, Options{}, map[string][]step{
		"host": {
			read("stats"),
			call("addTask", map[string]any{"id": "c", "goal": "count {{.Input}}", "assignee": "collector"}),
			call("runBoard", nil),
			func(req *model.Request) *model.Response {
				board = lastResult(req).Text
				return &model.Response{Text: "done"}
			},
		},
		"collector": {say(`{"total": 2, "items": ["p", "q"]}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(board, `"output":{"total":2,"items":["p","q"]}`) || strings.Contains(board, `"result"`) {
		t.Errorf("runBoard result: %s", board)
	}
	if g := m.requests("collector")[0].Caller.TaskGoal; g != "count {{.Input}}" {
		t.Errorf("a host's goal was rendered: %q", g)
	}
}

// engine.Generate takes an output schema too: the answer is the JSON,
// after a repair turn; a schema that does not compile is an error.
func TestGenerateTypedOutput(t *testing.T) {
	testpar.UnlessRace(t)
	m := &recModel{steps: []step{say(`{"total": "x"}`), say(`{"total": 1, "items": []}`)}}
	answer, err := Generate(context.Background(), GeneratorConfig{Name: "counter", Model: m, Output: countSchema}, "count")
	if err != nil {
		t.Fatal(err)
	}
	if answer != `{"total":1,"items":[]}` {
		t.Errorf("answer %q", answer)
	}
	reqs := m.requests()
	if len(reqs) != 2 || reqs[0].Output == nil || !strings.Contains(reqs[1].Messages[len(reqs[1].Messages)-1].Text, "at /total") {
		t.Errorf("%d requests; output %v", len(reqs), reqs[0].Output)
	}
	_, err = Generate(context.Background(), GeneratorConfig{Model: m, Output: map[string]any{"type": 3}}, "x")
	if err == nil || !strings.Contains(err.Error(), "output schema") {
		t.Errorf("bad schema: %v", err)
	}
}

// depsJSON encodes text results into one buffer; each is what
// json.Marshal writes for it (escapes, invalid UTF-8, U+2028), a typed
// result is its own JSON, and no result's bytes run into the next's.
func TestDepsJSONIsMarshal(t *testing.T) {
	deps := []board.DepResult{
		{TaskID: "a", Result: "plain"},
		{TaskID: "a2", Result: "plain too"},
		{TaskID: "b", Result: `<q> & "x" \ ` + "\u2028 \x01 \xff"},
		{TaskID: "c", Result: `{"n":1}`, Output: json.RawMessage(`{"n":1}`)},
		{TaskID: "d", Result: ""},
	}
	got := depsJSON(deps)
	for _, d := range deps {
		want, _ := json.Marshal(d.Result)
		if len(d.Output) > 0 {
			want = d.Output
		}
		if string(got[d.TaskID]) != string(want) {
			t.Errorf("%s: %s, want %s", d.TaskID, got[d.TaskID], want)
		}
	}
	for _, d := range deps { // appending to one result leaves the others
		_ = append(got[d.TaskID], 'X')
	}
	for _, d := range deps {
		if want, _ := json.Marshal(d.Result); len(d.Output) == 0 && string(got[d.TaskID]) != string(want) {
			t.Errorf("%s after appends to the others: %s, want %s", d.TaskID, got[d.TaskID], want)
		}
	}
	if depsJSON(nil) != nil {
		t.Error("no deps: want nil")
	}
}
