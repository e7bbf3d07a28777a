package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeCall is one tool call a fake OpenAI reply makes.
type fakeCall struct{ name, args string }

// fakeReply is one chat completion: text, tool calls, or both.
type fakeReply struct {
	text  string
	calls []fakeCall
}

// fakeOpenAI speaks the chat completions wire format, plain or streamed
// (SSE), answering with replies in order.
func fakeOpenAI(t *testing.T, replies []fakeReply) (*httptest.Server, func() []string) {
	return fakeOpenAIUsage(t, replies, map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110})
}

// fakeOpenAIUsage is fakeOpenAI reporting usage for every answer.
func fakeOpenAIUsage(t *testing.T, replies []fakeReply, usage map[string]any) (*httptest.Server, func() []string) {
	return fakeOpenAIFunc(t, func(i int, _ []byte) (fakeReply, bool) {
		if i >= len(replies) {
			return fakeReply{}, false
		}
		return replies[i], true
	}, usage)
}

// fakeOpenAIFunc is a stand-in whose i-th answer (from 0) reply makes
// from the request's body; false answers an error. Each body it saw comes
// back followed by a line with the request's Authorization header.
func fakeOpenAIFunc(t *testing.T, reply func(i int, body []byte) (fakeReply, bool), usage map[string]any) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var bodies []string
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(body)+"\n"+r.Header.Get("Authorization"))
		i := n
		n++
		rep, ok := reply(i, body)
		mu.Unlock()
		if !ok {
			http.Error(w, `{"error":{"message":"no more replies"}}`, http.StatusInternalServerError)
			return
		}
		var calls []map[string]any
		for j, c := range rep.calls {
			calls = append(calls, map[string]any{"index": j, "id": fmt.Sprintf("call_%d_%d", i, j), "type": "function",
				"function": map[string]any{"name": c.name, "arguments": c.args}})
		}
		finish := "stop"
		if len(calls) > 0 {
			finish = "tool_calls"
		}
		msg := map[string]any{"role": "assistant", "content": rep.text}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			chunk := func(v any) {
				b, _ := json.Marshal(v)
				fmt.Fprintf(w, "data: %s\n\n", b)
				w.(http.Flusher).Flush()
			}
			base := map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test"}
			for _, word := range strings.SplitAfter(rep.text, " ") {
				if word != "" {
					base["choices"] = []any{map[string]any{"index": 0, "delta": map[string]any{"content": word}}}
					chunk(base)
				}
			}
			if len(calls) > 0 {
				base["choices"] = []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": calls}}}
				chunk(base)
			}
			base["choices"] = []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}
			base["usage"] = usage
			chunk(base)
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-test",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), bodies...) }
}

// A run against an OpenAI-compatible server, recorded, then replayed
// offline with the same answer; the API key reaches no cassette, run
// record or output.
func TestRecordThenReplay(t *testing.T) {
	const key = "sk-test-0123456789-secret-key"
	srv, bodies := fakeOpenAI(t, helloReplies)
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	dir := t.TempDir()
	rec := filepath.Join(dir, "hello.cassette.jsonl")
	wf := "../../examples/hello/hello.workflow.yaml"
	code, out, errs := fsd(t, "run", wf, "--model", "openai/gpt-test", "--record-cassette", rec, "--runs-dir", filepath.Join(dir, "runs"))
	if code != exitOK {
		t.Fatalf("recorded run: exit %d: %s", code, errs)
	}
	if strings.TrimSpace(out) != "Ada is welcomed; the note is ready." {
		t.Errorf("recorded answer = %q", out)
	}
	reqs := bodies()
	if len(reqs) != 6 {
		t.Fatalf("server saw %d requests", len(reqs))
	}
	// The host is client-visible, so it streams; the default worker too.
	if !strings.Contains(reqs[0], `"stream":true`) {
		t.Errorf("the host did not stream:\n%s", reqs[0])
	}
	// The tool-call id of the first reply is echoed in the next request.
	if !strings.Contains(reqs[1], `"tool_call_id":"call_0_0"`) || !strings.Contains(reqs[0], `"role":"system"`) {
		t.Errorf("second request body:\n%s", reqs[1])
	}

	// Replay offline: no key, no server.
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/unreachable")
	code, out2, errs := fsd(t, "run", wf, "--replay", rec, "--runs-dir", filepath.Join(dir, "runs"), "--events", "json")
	if code != exitOK {
		t.Fatalf("replay: exit %d: %s", code, errs)
	}
	if !strings.Contains(out2, `"answer":"Ada is welcomed; the note is ready."`) {
		t.Errorf("replayed run did not give the recorded answer:\n%s", out2)
	}

	// A replay of a different workflow fails clearly at the first divergence.
	other := filepath.Join(dir, "other.workflow.yaml")
	data, _ := os.ReadFile(wf)
	write(t, other, strings.Replace(string(data), "You welcome new colleagues.", "You are someone else.", 1))
	write(t, filepath.Join(dir, "hello.script.yaml"), "host: [{say: x}]\n")
	if err := os.MkdirAll(filepath.Join(dir, "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errs = fsd(t, "run", other, "--replay", rec, "--runs-dir", filepath.Join(dir, "runs"))
	if code != exitProblems || !strings.Contains(errs, "replay") || !strings.Contains(errs, "context") {
		t.Errorf("diverging replay: exit %d: %s", code, errs)
	}

	// The key is nowhere: cassette, run records, output.
	var leaks []string
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(path); strings.Contains(string(b), key) {
				leaks = append(leaks, path)
			}
		}
		return nil
	})
	if strings.Contains(out+out2+errs, key) {
		leaks = append(leaks, "output")
	}
	if len(leaks) > 0 {
		t.Errorf("the API key leaked into %v", leaks)
	}
}

func TestMissingKeyFailsBeforeRun(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	runs := t.TempDir()
	code, _, errs := fsd(t, "run", "../../examples/hello/hello.workflow.yaml", "--model", "anthropic/claude-test", "--runs-dir", runs)
	if code != exitProblems || !strings.Contains(errs, "ANTHROPIC_API_KEY") {
		t.Errorf("exit %d: %s", code, errs)
	}
	if entries, _ := os.ReadDir(runs); len(entries) != 0 {
		t.Error("a run record was started for a run that cannot start")
	}
	for _, bad := range []string{"gpt-4", "acme/x", "openai/"} {
		code, _, errs := fsd(t, "run", "../../examples/hello/hello.workflow.yaml", "--model", bad, "--runs-dir", runs)
		if code != exitProblems || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("--model %s: exit %d: %q", bad, code, errs)
		}
	}
}
