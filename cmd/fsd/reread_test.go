package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/promptcache"
)

// rereadReplies has the host read the greeter (a handle), then farewell
// (inline), delegate a note, and read the greeter again before it
// answers: the re-read makes the greeter active and loads nothing, and
// the board's status changes twice on the way. The worker's answer is
// fifth in arrival order.
var rereadReplies = []fakeReply{
	{calls: []fakeCall{{"read_skill", `{"id":"greeter"}`}}},
	{calls: []fakeCall{{"read_skill", `{"id":"farewell"}`}}},
	{calls: []fakeCall{{"addTask", `{"id":"note","goal":"Welcome note for Ada","assignee":"writer"}`}}},
	{calls: []fakeCall{{"runBoard", `{}`}}},
	{text: "Welcome aboard, Ada!"},
	{calls: []fakeCall{{"read_skill", `{"id":"greeter"}`}}},
	{text: "Ada is welcomed; the note is ready."},
}

// rereadWorkflow is the hello workflow with the greeter as a handle and
// a second, inline skill beside it.
func rereadWorkflow(t *testing.T) string {
	t.Helper()
	wf := crossRunWorkflow(t)
	dir := filepath.Join(t.TempDir(), "farewell")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	skill := "id: farewell\nname: Farewell\ndescription: Says goodbye. Use when someone leaves.\nversion: 1.0.0\nchannel: inline\ninstructions: Wish them well.\n"
	if err := os.WriteFile(filepath.Join(dir, "farewell.skill.yaml"), []byte(skill), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(wf)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "skills: [", fmt.Sprintf("skills: [%q, ", dir), 1)
	if err := os.WriteFile(wf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return wf
}

// activeTag starts the active skill's line in a JSON body, which escapes <.
const activeTag = `\u003cactive_skill id=\"`

// activeOf is the id of the skill a body's last, volatile part says is
// active, "" for none.
func activeOf(body string) string {
	at := strings.LastIndex(body, activeTag)
	if at < 0 {
		return ""
	}
	id, _, _ := strings.Cut(body[at+len(activeTag):], `\"`)
	return id
}

// K8 on the Anthropic wire: after the last load, neither the board's
// status changing nor a re-read that makes another loaded skill active
// touches the system block; each request is served from the cache
// through the last breakpoint of the request before, and only its last
// blocks, after every breakpoint, say which skill is active.
func TestRereadKeepsTheCachedPrefixAnthropic(t *testing.T) {
	wf := rereadWorkflow(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	srv, bodies := scriptedAnthropicUsage(t, func(gen string, step int) fakeReply {
		if strings.Contains(gen, "| Task note") {
			return rereadReplies[4]
		}
		return append(rereadReplies[:4:4], rereadReplies[5:]...)[step]
	}, map[string]any{"input_tokens": 10, "output_tokens": 5})
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
	if code, _, errs := fsd(t, "run", wf, "--model", "anthropic/claude-test", "--runs-dir", filepath.Join(t.TempDir(), "runs")); code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var host []string
	for g, reqs := range bodies() {
		if !strings.Contains(g, "| Task note") {
			host = reqs
		}
	}
	if len(host) != 6 {
		t.Fatalf("%d host requests, want 6", len(host))
	}
	var cache promptcache.Cache
	for i, b := range host {
		s, err := cache.Send([]byte(b))
		if err != nil {
			t.Fatal(err)
		}
		if saysActive(systemOf(t, b)) {
			t.Errorf("host request %d: the system block says which skill is active", i+1)
		}
		if i < 3 {
			continue // the loads change the system block
		}
		if systemOf(t, b) != systemOf(t, host[i-1]) {
			t.Errorf("host request %d: the system block changed without a load:\n%s\n---\n%s", i+1, systemOf(t, host[i-1]), systemOf(t, b))
		}
		if want := markOf(t, host[i-1]) + 1; s.Read < want {
			t.Errorf("host request %d: the cache served %d blocks, want at least the %d the request before cached", i+1, s.Read, want)
		}
	}
	checkActive(t, host)
}

// checkActive checks that the host's requests name, last, the skill the
// re-read made active, and no other: the skill read last goes without
// saying while it is the one loaded last.
func checkActive(t *testing.T, host []string) {
	t.Helper()
	want := []string{"", "", "", "", "", "greeter"}
	for i, b := range host {
		if got := activeOf(b); got != want[i] {
			t.Errorf("host request %d: active skill %q, want %q", i+1, got, want[i])
		}
	}
	if !strings.Contains(host[4], boardTag) || boardOf(host[3]) == boardOf(host[4]) {
		t.Error("the board's status did not change between the host's fourth and fifth requests: the test does not exercise it")
	}
}

// K8 on the OpenAI wire: after the last load, every host request begins
// with every message of the one before but its last, which holds the
// board's status and the active skill.
func TestRereadKeepsTheCachedPrefixOpenAI(t *testing.T) {
	wf := rereadWorkflow(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	srv, bodies := fakeOpenAIUsage(t, rereadReplies, map[string]any{"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105})
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	if code, _, errs := fsd(t, "run", wf, "--model", "openai/gpt-test", "--runs-dir", filepath.Join(t.TempDir(), "runs")); code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var host []string
	var msgs [][]json.RawMessage
	for _, b := range bodies() {
		body, _, _ := strings.Cut(b, "\n") // the Authorization line follows
		var req struct {
			Key      string            `json:"prompt_cache_key"`
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal([]byte(body), &req); err != nil {
			t.Fatal(err)
		}
		if req.Key == "fsd/hello/host" {
			host = append(host, body)
			msgs = append(msgs, req.Messages)
		}
	}
	if len(host) != 6 {
		t.Fatalf("%d host requests, want 6", len(host))
	}
	for i := 3; i < len(msgs); i++ {
		prev, cur := msgs[i-1], msgs[i]
		if saysActive(string(cur[0])) {
			t.Errorf("host request %d: the system message says which skill is active", i+1)
		}
		stable := prev
		if last := string(prev[len(prev)-1]); strings.Contains(last, boardTag) || strings.Contains(last, activeTag) {
			stable = prev[:len(prev)-1] // the volatile part is last
		}
		if len(cur) <= len(stable) {
			t.Fatalf("host request %d is shorter than the one before", i+1)
		}
		for j := range stable {
			if string(stable[j]) != string(cur[j]) {
				t.Errorf("host request %d: message %d differs from the request before's:\n%s\n---\n%s", i+1, j+1, stable[j], cur[j])
				break
			}
		}
	}
	checkActive(t, host)
}

// saysActive reports whether a system block, as text or as JSON, marks a
// skill active: an active_skill element or an active attribute. (It may
// say how the active skill is told, a fixed line.)
func saysActive(system string) bool {
	return strings.Contains(system, "<active_skill") || strings.Contains(system, `active="`) || strings.Contains(system, `active=\"`)
}
