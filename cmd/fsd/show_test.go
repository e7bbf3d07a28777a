package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/internal/golden"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/scripted"
	"github.com/fsdrun/fsd/spec"
)

// recordExample runs an example on its scripted model with a fixed seed
// and one worker at a time (so flow observations come in a fixed order)
// and returns the runs dir; the run's id is id. Durability is
// commit-before-effects: under step durability a worker's final answer
// waits for the disk without its slot (J8), so the next worker may finish
// first and the observations' order would be the disk's.
func recordExample(t *testing.T, path, id string) string {
	t.Helper()
	p, diags := spec.LoadProject(path)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	p.Workflow.Limits.Concurrency = 1
	s, err := scripted.Load(filepath.Join(p.Workflow.Dir, p.Workflow.Script))
	if err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	var run *engine.Run
	seed := [32]byte{1, 2, 3}
	run, err = engine.New(p, engine.Options{
		Model:   scripted.New(s, func(id string) (string, error) { return run.Handle(id) }),
		RunsDir: runs, RunID: id, Seed: &seed, Durability: spec.DurabilityEffects,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Execute(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	return runs
}

// fsd show --requests prints every request of the examples as sent — among them a
// worker with flow observations (fanout's analysis) and one that inherits
// the conversation (fanout's brief) — with responses and usage.
func TestShowGoldens(t *testing.T) {
	for _, tc := range []struct{ name, path string }{
		{"fanout", "../../examples/fanout/fanout.workflow.yaml"},
		{"conversation", "../../examples/conversation.workflow.yaml"},
		{"pipeline", "../../examples/pipeline.workflow.yaml"},
		{"lifecycle", "../../examples/lifecycle/lifecycle.workflow.yaml"},
		{"hello", "../../examples/hello/hello.workflow.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := recordExample(t, tc.path, tc.name)
			code, out, errs := fsd(t, "show", tc.name, "--runs-dir", runs, "--requests")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			golden.CheckString(t, "testdata/show/"+tc.name+".golden", out)
		})
	}
	runs := recordExample(t, "../../examples/fanout/fanout.workflow.yaml", "fanout")
	code, out, errs := fsd(t, "show", "fan", "--runs-dir", runs, "--task", "brief", "--step", "1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	golden.CheckString(t, "testdata/show/fanout-brief-step1.golden", out)
	for _, want := range []string{"<observations>"} {
		code, out, _ := fsd(t, "show", filepath.Join(runs, "fanout"), "--task", "analysis")
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("the analyst's request lacks %s:\n%s", want, out)
		}
	}
}

func TestShowErrors(t *testing.T) {
	t.Parallel()
	runs := recordExample(t, "../../examples/hello/hello.workflow.yaml", "hello")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown run", []string{"show", "nope", "--runs-dir", runs}, exitUsage, "no run nope in " + runs + "; fsd runs --runs-dir " + runs + " lists them"},
		{"unknown task", []string{"show", "hello", "--runs-dir", runs, "--task", "zzz"}, exitProblems, `no generator for task "zzz" (tasks: host, note)`},
		{"no such step", []string{"show", "hello", "--runs-dir", runs, "--step", "99"}, exitProblems, "has a step 99"},
		{"bad format", []string{"show", "hello", "--runs-dir", runs, "--format", "xml"}, exitUsage, "--format must be text or json"},
		{"no run", []string{"show"}, exitUsage, "show takes RUN; got none (see fsd show --help)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := fsd(t, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d (want %d), stderr %q, want one line containing %q", code, tc.code, errs, tc.want)
			}
		})
	}
}

// standIn is an OpenAI-compatible stand-in provider that plays any
// example generically: with tools and nothing called yet, it calls the
// first tool (an enum argument takes the value the task names); after a
// result, or without tools, it answers in text. It keeps every body.
func standIn(t *testing.T) (*httptest.Server, func() [][]byte) {
	var mu sync.Mutex
	var bodies [][]byte
	var n int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Stream   bool `json:"stream"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name       string `json:"name"`
					Parameters struct {
						Properties map[string]struct {
							Enum []string `json:"enum"`
						} `json:"properties"`
					} `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		bodies = append(bodies, body)
		n++
		id := n
		mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		msg := map[string]any{"role": "assistant", "content": "answer " + fmt.Sprint(len(req.Messages))}
		finish := "stop"
		if last.Role == "tool" {
			msg["content"] = "done: " + last.Content
		} else if len(req.Tools) > 0 {
			f := req.Tools[0].Function
			args := map[string]string{}
			for name, p := range f.Parameters.Properties {
				args[name] = "x"
				for _, e := range p.Enum {
					if strings.Contains(last.Content, e) {
						args[name] = e
					}
				}
			}
			a, _ := json.Marshal(args)
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": fmt.Sprintf("call_%d", id), "type": "function", "function": map[string]any{"name": f.Name, "arguments": string(a)}}}}
			finish = "tool_calls"
		}
		usage := map[string]any{"prompt_tokens": 100 + id, "completion_tokens": 10, "total_tokens": 110 + id}
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			delta := map[string]any{"role": "assistant"}
			if c, ok := msg["content"].(string); ok {
				delta["content"] = c
			}
			if tc, ok := msg["tool_calls"].([]any); ok {
				tc[0].(map[string]any)["index"] = 0
				delta["tool_calls"] = tc
			}
			for _, chunk := range []map[string]any{
				{"choices": []any{map[string]any{"index": 0, "delta": delta}}},
				{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, "usage": usage},
			} {
				chunk["id"], chunk["object"], chunk["created"], chunk["model"] = "c", "chat.completion.chunk", 1, "stand-in"
				b, _ := json.Marshal(chunk)
				fmt.Fprintf(w, "data: %s\n\n", b)
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "created": 1, "model": "stand-in",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
	}))
	t.Cleanup(srv.Close)
	return srv, func() [][]byte { mu.Lock(); defer mu.Unlock(); return append([][]byte(nil), bodies...) }
}

// wireRequest is the part of a chat completions body that carries the
// request: the messages (the context block first, as the system message)
// and the tools.
type wireRequest struct {
	Messages []wireMessage `json:"messages"`
	Tools    []struct {
		Function wireTool `json:"function"`
	} `json:"tools"`
}

type wireMessage struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls,omitempty"`
}

type wireTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Parameters  any    `json:"parameters"`
}

// canonical renders a request in one comparable form: every string as
// sent, schemas as decoded JSON.
func canonical(t *testing.T, w wireRequest) string {
	type msg struct{ Role, Content, CallID, Calls string }
	var out struct {
		Messages []msg
		Tools    []wireTool
	}
	for _, m := range w.Messages {
		c := msg{Role: m.Role, CallID: m.ToolCallID}
		if s, ok := m.Content.(string); ok {
			c.Content = s
		}
		for _, tc := range m.ToolCalls {
			c.Calls += tc.ID + " " + tc.Function.Name + " " + tc.Function.Arguments + "\n"
		}
		out.Messages = append(out.Messages, c)
	}
	for _, tl := range w.Tools {
		out.Tools = append(out.Tools, tl.Function)
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// asWire renders a request from `fsd show --format json` the way the
// OpenAI provider puts it on the wire (see model/openai's mapping).
func asWire(t *testing.T, r showRequest) wireRequest {
	var w wireRequest
	add := func(m wireMessage) { w.Messages = append(w.Messages, m) }
	if r.Context != "" {
		add(wireMessage{Role: "system", Content: r.Context})
	}
	for _, m := range r.Messages {
		wm := wireMessage{Role: string(m.Role), Content: m.Text}
		switch m.Role {
		case model.Tool:
			wm.ToolCallID = m.CallID
		case model.Assistant:
			if m.Text == "" && len(m.Calls) > 0 {
				wm.Content = nil
			}
			for _, c := range m.Calls {
				var tc struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				}
				tc.ID, tc.Function.Name, tc.Function.Arguments = c.ID, c.Name, string(c.Args)
				wm.ToolCalls = append(wm.ToolCalls, tc)
			}
		}
		add(wm)
	}
	for _, d := range r.Tools {
		var schema map[string]any
		if err := json.Unmarshal(d.Parameters, &schema); err != nil {
			t.Fatal(err)
		}
		if _, ok := schema["type"]; !ok {
			schema["type"] = "object"
		}
		w.Tools = append(w.Tools, struct {
			Function wireTool `json:"function"`
		}{wireTool{Name: d.Name, Description: d.Description, Parameters: schema}})
	}
	return w
}

// What `fsd show --requests` prints is what the provider received: the fan-out
// example (flow observations, conversation supply, streamed and plain
// calls) against a stand-in OpenAI server, every body it got matched one
// to one with a request show rebuilt from the record.
func TestShowIsWhatTheProviderReceived(t *testing.T) {
	srv, bodies := standIn(t)
	t.Setenv("OPENAI_API_KEY", "sk-stand-in-key-123456")
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	runs := t.TempDir()
	code, _, errs := fsd(t, "run", "../../examples/fanout/fanout.workflow.yaml", "--model", "openai/stand-in", "--runs-dir", runs)
	if code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	sums, err := listRecords(runs)
	if err != nil || len(sums) != 1 {
		t.Fatalf("runs: %v %v", sums, err)
	}
	code, out, errs := fsd(t, "show", sums[0], "--runs-dir", runs, "--requests", "--format", "json")
	if code != exitOK {
		t.Fatalf("show: exit %d: %s", code, errs)
	}
	var gens []showGen
	if err := json.Unmarshal([]byte(out), &gens); err != nil {
		t.Fatal(err)
	}
	var shown, received []string
	flow, supplied := false, false
	for _, g := range gens {
		for _, st := range g.Steps {
			shown = append(shown, canonical(t, asWire(t, st.Request)))
			flow = flow || strings.Contains(st.Request.Context, "<observations>")
			supplied = supplied || (g.Task == "brief" && len(st.Request.Messages) > 1)
		}
	}
	for _, b := range bodies() {
		var w wireRequest
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		received = append(received, canonical(t, w))
	}
	if !flow || !supplied {
		t.Errorf("the run lacks a worker with flow observations (%v) or with an inherited conversation (%v)", flow, supplied)
	}
	sort.Strings(shown)
	sort.Strings(received)
	if len(received) < 10 {
		t.Fatalf("only %d requests reached the provider", len(received))
	}
	if d := cmp.Diff(received, shown); d != "" {
		t.Errorf("show differs from what the provider received (-received +shown):\n%s", d)
	}
}

// listRecords returns the run ids under runs.
func listRecords(runs string) ([]string, error) {
	entries, err := filepath.Glob(filepath.Join(runs, "*", "run.json"))
	var ids []string
	for _, e := range entries {
		ids = append(ids, filepath.Base(filepath.Dir(e)))
	}
	return ids, err
}
