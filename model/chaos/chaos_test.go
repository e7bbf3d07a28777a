package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/model"
)

// hostRequest looks like an engine's host request with a loaded handle
// skill, a receipt of another, and a board.
func hostRequest(step int) *model.Request {
	return &model.Request{
		Context: "<catalog>\n- id: alpha\n  name: A\n- id: beta\n  name: B\n</catalog>\n" +
			`<loaded_skills><skill id="alpha" version="1.0.0" channel="handle" handle="h_00112233445566778899aabbccddeeff" trust="trusted"/></loaded_skills>`,
		Messages: []model.Message{
			{Role: model.User, Text: "go"},
			{Role: model.Assistant, Calls: []model.ToolCall{{ID: "c1", Name: "read_skill", Args: json.RawMessage(`{"id":"beta"}`)}, {ID: "c2", Name: "beta_echo"}}},
			{Role: model.Tool, CallID: "c1", Name: "read_skill", Text: `{"id":"beta","handle":"h_ffeeddccbbaa99887766554433221100"}`},
			{Role: model.Tool, CallID: "c2", Name: "beta_echo", Text: "ok"},
			{Role: model.Assistant, Calls: []model.ToolCall{{ID: "c3", Name: "addTask"}}},
			{Role: model.Tool, CallID: "c3", Name: "addTask", Text: `{"ok":false,"error":"unknown_assignee","roster":["iso","team/iso"]}`},
			{Role: model.Context, Volatile: true, Text: "<board tasks=\"1\">\n- t1 [pending] worker: x\n</board>"},
		},
		Tools: []model.ToolDef{
			{Name: "read_skill", Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)},
			{Name: "addTask", Parameters: json.RawMessage(`{"type":"object"}`)},
			{Name: "runBoard", Parameters: json.RawMessage(`{"type":"object"}`)},
			{Name: "alpha_echo", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer","minimum":1,"maximum":3}},"required":["text"]}`)},
			{Name: "artifact_md", Parameters: json.RawMessage(`{"type":"object","properties":{"get":{"enum":["headings","section"]},"handle":{"type":"string"},"heading":{"type":"string"}},"required":["handle","get"]}`)},
		},
		Caller: model.Caller{Step: step},
	}
}

func TestLearn(t *testing.T) {
	k := learn(hostRequest(0))
	got := map[string][]string{"catalog": k.catalog, "current": k.current, "seen": k.seen, "tasks": k.tasks, "roster": k.roster, "called": k.called}
	want := map[string][]string{
		"catalog": {"alpha", "beta"},
		"current": {"h_00112233445566778899aabbccddeeff"},
		"seen":    {"h_ffeeddccbbaa99887766554433221100"},
		"tasks":   {"t1"},
		"roster":  {"iso", "team/iso"},
		"called":  {"read_skill", "beta_echo", "addTask"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("learned (-want +got):\n%s", d)
	}
}

// The answer is a pure function of seed and request: the same request gets
// the same answer, from any goroutine, in any order.
func TestReproducible(t *testing.T) {
	m := New(7, Options{ErrorRate: 0.1})
	type answer struct {
		Resp *model.Response
		Err  string
	}
	ask := func(step int) answer {
		resp, err := m.Generate(context.Background(), hostRequest(step))
		a := answer{Resp: resp}
		if err != nil {
			a.Err = err.Error()
		}
		return a
	}
	want := make([]answer, 40)
	for i := range want {
		want[i] = ask(i)
	}
	var wg sync.WaitGroup
	got := make([]answer, 40)
	for i := range got {
		wg.Go(func() { got[len(got)-1-i] = ask(len(got) - 1 - i) })
	}
	wg.Wait()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("answers differ between runs (-first +second):\n%s", d)
	}
	other, _ := New(8, Options{}).Generate(context.Background(), hostRequest(3))
	if cmp.Equal(want[3].Resp, other) {
		t.Error("seeds 7 and 8 answered step 4 the same way")
	}
}

// Workers answer by WorkerSteps; the host by its cap; every call has a
// name-able shape and, without RawJSON, valid JSON arguments.
func TestBounds(t *testing.T) {
	kinds := map[string]int{}
	for seed := range uint64(200) {
		m := New(seed, Options{HugeBytes: 1 << 10, ErrorRate: 0.05, Readers: hostRequest(0).Tools[4:]})
		worker := &model.Request{Messages: []model.Message{{Role: model.User, Text: "task"}},
			Tools:  []model.ToolDef{{Name: "team_echo", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}},
			Caller: model.Caller{Agent: "team/iso", TaskID: "t1", Step: 2}}
		resp, err := m.Generate(context.Background(), worker)
		if err == nil && len(resp.Calls) > 0 {
			t.Errorf("seed %d: worker called tools at its step cap: %+v", seed, resp.Calls)
		}
		for step := 0; step < 20; step++ {
			resp, err := m.Generate(context.Background(), hostRequest(step))
			if err != nil {
				if !errors.Is(err, ErrScripted) {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
				kinds["error"]++
				continue
			}
			if step+1 >= m.HostCap() && len(resp.Calls) > 0 {
				t.Errorf("seed %d: host called tools at step %d past its cap %d", seed, step+1, m.HostCap())
			}
			if len(resp.Calls) == 0 {
				kinds["final"]++
			}
			for _, c := range resp.Calls {
				if !json.Valid(c.Args) {
					t.Errorf("seed %d: invalid JSON arguments without RawJSON: %q", seed, c.Args)
				}
				kinds[c.Name]++
				if strings.Contains(string(c.Args), "chaos huge argument") {
					kinds["huge"]++
				}
			}
		}
	}
	for _, k := range []string{"final", "error", "huge", "read_skill", "addTask", "runBoard", "cancelTask", "alpha_echo", "beta_echo", "artifact_md", "no_such_tool"} {
		if kinds[k] == 0 {
			t.Errorf("200 seeds never produced %s: %v", k, kinds)
		}
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(1, Options{}).Generate(ctx, hostRequest(0)); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// Calls of a reader that is not offered use the get values its definition
// lists (and a few no reader has), so the model follows the runtime's
// reader table rather than a copy of it.
func TestReaderGetsFromDefinitions(t *testing.T) {
	reader := model.ToolDef{Name: "some_reader", Parameters: json.RawMessage(`{"type":"object","properties":{"get":{"enum":["zebra","yak"]},"handle":{"type":"string"}}}`)}
	gets := map[string]int{}
	for seed := range uint64(300) {
		m := New(seed, Options{Readers: []model.ToolDef{reader}})
		for step := 0; step < 10; step++ {
			resp, err := m.Generate(context.Background(), hostRequest(step))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range resp.Calls {
				if c.Name != reader.Name {
					continue
				}
				var args struct{ Get string }
				if err := json.Unmarshal(c.Args, &args); err != nil {
					t.Fatal(err)
				}
				gets[args.Get]++
			}
		}
	}
	for g := range gets {
		if !slices.Contains([]string{"zebra", "yak", "", "everything"}, g) {
			t.Errorf("a call of the reader has get %q, which neither its definition nor badGets lists", g)
		}
	}
	if gets["zebra"] == 0 || gets["yak"] == 0 {
		t.Errorf("the reader's own get values were never called: %v", gets)
	}
}
