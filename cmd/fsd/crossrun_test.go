package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/promptcache"
)

// crossRunWorkflow is the hello workflow with the greeter read through a
// handle: its handle is in the host's system block from the second
// request on, and the board's status changes between the host's steps.
func crossRunWorkflow(t *testing.T) string {
	wf := helloWorkflow(t, false)
	appendFile(t, wf, "channel: handle\n")
	return wf
}

var hasHandle = regexp.MustCompile(`h_[0-9a-f]{32}`)

// boardTag starts the board's status in a JSON body, which escapes <.
const boardTag = `\u003cboard`

// systemOf is an Anthropic body's system text.
func systemOf(t *testing.T, body string) string {
	t.Helper()
	var b struct {
		System []struct{ Text string } `json:"system"`
	}
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(b.System)
}

// lastMark is the index of the last block of an Anthropic body that
// carries cache_control, and of the first that holds the board's status,
// counting blocks in cache order (promptcache's): tools, system blocks,
// each message's content blocks; -1 for none.
func lastMark(t *testing.T, body string) (mark, board int) {
	t.Helper()
	var b struct {
		Tools    []map[string]any `json:"tools"`
		System   []map[string]any `json:"system"`
		Messages []struct {
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		t.Fatal(err)
	}
	blocks := append(slices.Clone(b.Tools), b.System...)
	for _, m := range b.Messages {
		blocks = append(blocks, m.Content...)
	}
	mark, board = -1, -1
	for i, x := range blocks {
		if _, ok := x["cache_control"]; ok {
			mark = i
		}
		if text, _ := x["text"].(string); strings.HasPrefix(text, "<board") && board < 0 {
			board = i
		}
	}
	return mark, board
}

func markOf(t *testing.T, body string) int {
	t.Helper()
	m, _ := lastMark(t, body)
	return m
}

// K6: two runs of one workflow with the same input send byte-identical
// requests on the Anthropic wire, handles included, so a prompt cache
// shared by the runs (promptcache, the provider's as documented) serves
// every request of the second run through its last breakpoint; a third
// run whose worker answers otherwise sends the same requests until that
// answer, and its first differing request is still read back through the
// previous request's end. Within a run, the board's status is never in
// the system block and comes after the last breakpoint: the host's
// request after the status changed reads back the whole cached prefix
// of the request before.
func TestTwoRunsSendTheSameRequestsAnthropic(t *testing.T) {
	wf := crossRunWorkflow(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	runOnce := func(note string) map[string][]string {
		srv, bodies := scriptedAnthropicUsage(t, func(gen string, step int) fakeReply {
			if strings.Contains(gen, "| Task note") {
				return fakeReply{text: note}
			}
			host := []fakeReply{helloReplies[0], helloReplies[1], helloReplies[2], helloReplies[3], helloReplies[5]}
			return host[step]
		}, map[string]any{"input_tokens": 10, "output_tokens": 5})
		t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
		code, _, errs := fsd(t, "run", wf, "--model", "anthropic/claude-test", "--runs-dir", filepath.Join(t.TempDir(), "runs"))
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		return bodies()
	}
	first, second := runOnce("Welcome aboard, Ada!"), runOnce("Welcome aboard, Ada!")
	third := runOnce("Hello Ada, and welcome!")
	var host string
	for g := range first {
		if !strings.Contains(g, "| Task note") {
			host = g
		}
	}
	if len(first) != 2 || len(first[host]) != 5 {
		t.Fatalf("first run: generators %d, host requests %d; want 2 and 5", len(first), len(first[host]))
	}
	if !hasHandle.MatchString(strings.Join(first[host], "")) {
		t.Fatal("no request named the greeter's handle: the test does not exercise handles")
	}

	var cache promptcache.Cache
	send := func(body string) promptcache.Served {
		s, err := cache.Send([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// The first run, in order: the board's status comes after the last
	// breakpoint, and a change of it leaves the cached prefix whole.
	changes := 0
	for i, b := range first[host] {
		s := send(b)
		if strings.Contains(systemOf(t, b), "<board") {
			t.Errorf("host request %d: the board's status is in the system block", i+1)
		}
		mark, board := lastMark(t, b)
		if board >= 0 && board <= mark {
			t.Errorf("host request %d: the board's status is block %d, the last cache breakpoint on block %d", i+1, board+1, mark+1)
		}
		// A load changes the system block; from one request to the next
		// without one, the board's status may change, the prefix may not.
		if i == 0 || systemOf(t, b) != systemOf(t, first[host][i-1]) {
			continue
		}
		if board >= 0 && boardOf(b) != boardOf(first[host][i-1]) {
			changes++
		}
		if want := markOf(t, first[host][i-1]) + 1; s.Read < want {
			t.Errorf("host request %d: the cache served %d blocks, want at least the %d the request before cached", i+1, s.Read, want)
		}
	}
	if changes < 2 {
		t.Fatalf("the board's status changed %d times between host requests, want 2 (a task added, then done)", changes)
	}
	for g, reqs := range first {
		if g != host {
			for _, b := range reqs {
				send(b)
			}
		}
	}
	for g, reqs := range first {
		if !slices.Equal(reqs, second[g]) {
			for i := range min(len(reqs), len(second[g])) {
				if reqs[i] != second[g][i] {
					t.Errorf("%.40s request %d differs between two runs:\n%s\n%s", g, i+1, reqs[i], second[g][i])
					break
				}
			}
			continue
		}
		for i, b := range second[g] {
			if s, want := send(b), markOf(t, b)+1; s.Read < want {
				t.Errorf("second run, %.40s request %d: the cache served %d blocks, want %d (through its last breakpoint)", g, i+1, s.Read, want)
			}
		}
	}
	// The third run's worker answered otherwise: the host's requests are
	// the first run's until the one carrying that answer.
	for i, b := range third[host] {
		if i < 4 && b != first[host][i] {
			t.Errorf("third run, host request %d differs before any answer did", i+1)
		}
		if i == 4 {
			if b == first[host][i] {
				t.Error("third run, host request 5 does not carry the worker's other answer")
			}
			if s, want := send(b), markOf(t, first[host][3])+1; s.Read < want {
				t.Errorf("third run, host request 5: the cache served %d blocks, want at least %d", s.Read, want)
			}
		}
	}
}

// boardOf is the board's status in a body, "" for none.
func boardOf(body string) string {
	at := strings.Index(body, boardTag)
	if at < 0 {
		return ""
	}
	end := strings.Index(body[at:], `\u003c/board`)
	if end < 0 {
		return body[at:]
	}
	return body[at : at+end]
}

// K6 on the OpenAI wire: the same requests in two runs, the same
// prompt_cache_key, and the board's status the last message, so a change
// of it leaves every earlier message as it was.
func TestTwoRunsSendTheSameRequestsOpenAI(t *testing.T) {
	wf := crossRunWorkflow(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	var runs [2][]string
	for run := range runs {
		srv, bodies := fakeOpenAIUsage(t, helloReplies, map[string]any{"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105})
		t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
		code, _, errs := fsd(t, "run", wf, "--model", "openai/gpt-test", "--runs-dir", filepath.Join(t.TempDir(), "runs"))
		if code != exitOK {
			t.Fatalf("run %d: exit %d: %s", run+1, code, errs)
		}
		for _, b := range bodies() {
			body, _, _ := strings.Cut(b, "\n") // the Authorization line follows
			runs[run] = append(runs[run], body)
		}
	}
	if len(runs[0]) != 6 || !slices.Equal(runs[0], runs[1]) {
		t.Fatalf("two runs sent different requests:\n%s\n---\n%s", strings.Join(runs[0], "\n"), strings.Join(runs[1], "\n"))
	}
	if !hasHandle.MatchString(strings.Join(runs[0], "")) {
		t.Fatal("no request named the greeter's handle: the test does not exercise handles")
	}
	var prev []json.RawMessage
	statuses := 0
	for i, b := range runs[0] {
		var body struct {
			Key      string            `json:"prompt_cache_key"`
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal([]byte(b), &body); err != nil {
			t.Fatal(err)
		}
		if body.Key != "fsd/hello/host" && body.Key != "fsd/hello/greeter/writer" {
			t.Errorf("request %d: prompt_cache_key %q", i+1, body.Key)
		}
		if body.Key != "fsd/hello/host" {
			continue
		}
		msgs := body.Messages
		for j, m := range msgs {
			if strings.Contains(string(m), boardTag) && j != len(msgs)-1 {
				t.Errorf("host request %d: the board's status is message %d of %d, not the last", i+1, j+1, len(msgs))
			}
		}
		stable := msgs
		if strings.Contains(string(msgs[len(msgs)-1]), boardTag) {
			stable = msgs[:len(msgs)-1]
			statuses++
		}
		// A load changes the system message; otherwise every message of
		// the request before but its status begins this one.
		sameSystem := len(prev) > 0 && string(prev[0]) == string(stable[0])
		if sameSystem && (len(stable) < len(prev) || !slices.EqualFunc(prev, stable[:len(prev)], func(a, b json.RawMessage) bool { return string(a) == string(b) })) {
			t.Errorf("host request %d does not begin with the request before (without its status):\n%s\n%s", i+1, prev, stable)
		}
		prev = stable
	}
	if statuses < 2 {
		t.Fatalf("%d host requests carried the board's status, want 2", statuses)
	}
}
