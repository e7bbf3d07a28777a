package main

import (
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
)

// leakKey is a fake API key with the characters JSON and HTML escape, so
// a check that masks only the raw form after encoding misses it; leakCore
// is its plain part, found in any encoding of it.
const (
	leakCore = "5ecret-9f8e7d6c5b4a"
	leakKey  = `sk-&<fsd>"q'` + leakCore
)

// leakForms are the ways the key may be spelled in a file, a stream or a
// request: as it is, JSON-escaped (with and without HTML escapes),
// HTML-escaped, and its plain part alone.
func leakForms() []string {
	j, _ := json.Marshal(leakKey)
	return []string{leakKey, string(j[1 : len(j)-1]), `sk-&<fsd>\"q'` + leakCore, html.EscapeString(leakKey), leakCore}
}

// leakTree writes a workflow whose skill's command tool is given
// OPENAI_API_KEY and prints it on stdout and stderr (as curl -v prints
// the header it sends) and fails; its agent writes down its task.
func leakTree(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	write(t, filepath.Join(base, "leak.workflow.yaml"),
		"name: leak\nskills: [./skills]\nhost: {prompt: You check the API.}\ninput: Check the API.\n")
	write(t, filepath.Join(base, "skills", "api", "api.skill.yaml"), `id: api
name: API
description: Calls the API. Use to check it.
version: 1.0.0
channel: inline
instructions: Call probe.
tools:
  - name: probe
    description: Calls the API verbosely.
    run:
      command: [sh, -c, 'echo "> Authorization: Bearer $OPENAI_API_KEY"; echo "< echo: $OPENAI_API_KEY" >&2; exit 3']
      env: [OPENAI_API_KEY]
agents:
  writer:
    prompt: Write down what you are told.
`)
	return filepath.Join(base, "leak.workflow.yaml")
}

// lastContent is the content of the last message of a chat completions
// request with the role given.
func lastContent(t *testing.T, body []byte, role string) string {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Errorf("request body: %v", err)
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == role {
			s, _ := m.Content.(string)
			return s
		}
	}
	return ""
}

// The attack: a tool given OPENAI_API_KEY prints it on stdout and stderr
// and fails; a model repeats what it read into a task's goal, the task's
// answer and the run's answer. The key must be in none of the run
// folder's files, the event stream, the logs, the report, or the bodies
// of the requests the provider received — in no form. Masked, the
// result still says the key was there.
//
// S8: tool output is masked before it is journaled, sent or rendered.
func TestToolOutputSecretsAreMasked(t *testing.T) {
	var probe string // what the host read from probe, repeated after
	srv, bodies := fakeOpenAIFunc(t, func(i int, body []byte) (fakeReply, bool) {
		switch i {
		case 0:
			return fakeReply{calls: []fakeCall{{"read_skill", `{"id":"api"}`}}}, true
		case 1:
			return fakeReply{calls: []fakeCall{{"probe", `{}`}}}, true
		case 2:
			probe = lastContent(t, body, "tool")
			goal, _ := json.Marshal(map[string]string{"id": "note", "goal": "Write down: " + probe, "assignee": "writer"})
			return fakeReply{calls: []fakeCall{{"addTask", string(goal)}}}, true
		case 3:
			return fakeReply{calls: []fakeCall{{"runBoard", `{}`}}}, true
		case 4:
			return fakeReply{text: "Noted. " + lastContent(t, body, "user")}, true
		case 5:
			return fakeReply{text: "The probe said: " + probe}, true
		}
		return fakeReply{}, false
	}, map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110})
	t.Setenv("OPENAI_API_KEY", leakKey)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	runs := filepath.Join(t.TempDir(), "runs")
	code, out, errs := fsd(t, "run", leakTree(t), "--model", "openai/gpt-test", "--events", "json", "-v", "--runs-dir", runs)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	evs := events(t, out)
	res, ok := toolResult(evs, "probe")
	if !ok || !res.Error || !strings.Contains(res.Result, "exited with status 3") ||
		!strings.Contains(res.Result, "Bearer [REDACTED]") || !strings.Contains(res.Result, "< echo: [REDACTED]") {
		t.Errorf("probe's result should say it failed and show the key masked on stdout and stderr: %+v", res)
	}
	var answer string
	for _, e := range evs {
		if e.Type == event.RunFinished {
			answer = e.Answer
		}
	}
	if !strings.Contains(answer, "[REDACTED]") {
		t.Errorf("the answer repeats the probe's result, masked: %q", answer)
	}
	reqs := bodies()
	if len(reqs) != 6 {
		t.Errorf("the server saw %d requests, want 6", len(reqs))
	}
	var where []string
	look := func(name, text string) {
		for _, f := range leakForms() {
			if strings.Contains(text, f) {
				where = append(where, name+" holds "+f)
				return
			}
		}
	}
	for i, b := range reqs {
		body, auth, _ := strings.Cut(b, "\n")
		if auth != "Bearer "+leakKey {
			t.Errorf("request %d authorized as %q: the provider is called with the key", i+1, auth)
		}
		look("request body "+string(rune('1'+i)), body)
	}
	look("the event stream", out)
	look("the logs", errs)
	eachFile(t, runs, look)
	for _, name := range []string{"journal.jsonl", "events.jsonl", "run.json", "board.json", "requests.jsonl"} {
		if _, err := os.Stat(filepath.Join(runs, runID(t, evs), name)); err != nil {
			t.Errorf("the run folder lacks %s: %v", name, err)
		}
	}
	code, page, errs := fsd(t, "report", runID(t, evs), "--runs-dir", runs, "-o", "-")
	if code != exitOK {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	look("the report", page)
	for _, w := range where {
		t.Error(w)
	}
}

// runID is the id of the run whose events evs are.
func runID(t *testing.T, evs []event.Event) string {
	t.Helper()
	for _, e := range evs {
		if e.Run != "" {
			return e.Run
		}
	}
	t.Fatal("no event names the run")
	return ""
}
