package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/golden"
)

func fsd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// The lifecycle example shows, in its events and run record, a skill read,
// a skill tool called, an eviction after the fourth read, the evicted
// skill's tool refused, a disabled skill's read refused, and an answer.
func TestRunLifecycleExample(t *testing.T) {
	runs := t.TempDir()
	code, out, errs := fsd(t, "run", "../../examples/lifecycle/lifecycle.workflow.yaml", "--events", "json", "--runs-dir", runs)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	events := events(t, out)
	if len(events) == 0 || events[len(events)-1].Type != event.RunFinished || events[len(events)-1].Answer == "" {
		t.Fatalf("the stream does not end in run.finished with an answer")
	}
	seen := map[string]bool{}
	for _, e := range events {
		switch {
		case e.Type == event.SkillLoaded:
			seen["read"] = true
		case e.Type == event.ToolResult && e.Tool == "get_weather" && !e.Error:
			seen["tool"] = true
		case e.Type == event.SkillUnloaded && e.Skill == "weather" && e.Reason == "evicted":
			seen["evicted"] = true
		case e.Type == event.ToolResult && e.Error && e.Result == "Unknown tool: get_weather":
			seen["unknown"] = true
		case e.Type == event.ToolResult && e.Error && strings.Contains(e.Result, "SKILL_NOT_ENABLED_IN_PROJECT"):
			seen["disabled"] = true
		}
	}
	for _, want := range []string{"read", "tool", "evicted", "unknown", "disabled"} {
		if !seen[want] {
			t.Errorf("no %s event", want)
		}
	}
	dirs, _ := os.ReadDir(runs)
	if len(dirs) != 1 {
		t.Fatalf("%d run records", len(dirs))
	}
	for _, f := range []string{"workflow.yaml", "events.jsonl", "journal.jsonl", "requests.jsonl", "run.json"} {
		if _, err := os.Stat(filepath.Join(runs, dirs[0].Name(), f)); err != nil {
			t.Errorf("run record lacks %s", f)
		}
	}
}

func TestRunPlainOutput(t *testing.T) {
	code, out, errs := fsd(t, "run", "../../examples/lifecycle/lifecycle.workflow.yaml", "--runs-dir", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.HasPrefix(out, "Saturday in Lisbon") || strings.Contains(out, "{") {
		t.Errorf("stdout should hold only the answer: %q", out)
	}
	if !strings.Contains(errs, "skill weather 1.0.0 unloaded: evicted") {
		t.Errorf("stderr progress: %q", errs)
	}
}

// A failed run exits 1 with one line on stderr; usage errors exit 2.
func TestRunFailures(t *testing.T) {
	dir := t.TempDir()
	wf := filepath.Join(dir, "short.workflow.yaml")
	write(t, wf, "name: short\nmodel: scripted\nscript: short.script.yaml\nhost: {prompt: hi}\ninput: go\n")
	write(t, filepath.Join(dir, "short.script.yaml"), "host:\n  - call: read_skill\n    args: {id: nothing}\n")
	badKey := filepath.Join(dir, "bad.workflow.yaml")
	write(t, badKey, "name: bad\ndurability: sometimes\nmodel: scripted\nscript: short.script.yaml\nhost: {prompt: hi}\ninput: go\n")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"script exhausted", []string{"run", wf, "--runs-dir", dir}, exitProblems, "step 2 was asked for"},
		{"missing workflow", []string{"run", filepath.Join(dir, "nope.workflow.yaml")}, exitUsage, "nope.workflow.yaml: no such file or folder"},
		{"unknown provider", []string{"run", wf, "--model", "acme/x"}, exitProblems, "unknown provider"},
		{"misspelled provider", []string{"run", wf, "--model", "antropic/x"}, exitProblems, `unknown provider "antropic" (known: openai, openai-responses, anthropic, gemini, scripted); did you mean "anthropic"?`},
		{"bad events format", []string{"run", wf, "--events", "xml"}, exitUsage, "--events"},
		{"no workflow", []string{"run"}, exitUsage, "fsd: run takes WORKFLOW [MESSAGE]; got none (see fsd run --help)"},
		{"unknown flag", []string{"run", wf, "--bogus"}, exitUsage, "bogus"},
		{"bad durability", []string{"run", wf, "--durability", "sometimes"}, exitUsage, `--durability: durability must be step or commit-before-effects, not "sometimes"`},
		{"bad durability key", []string{"run", badKey}, exitProblems, "bad.workflow.yaml:2:13"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := fsd(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d (%s)", code, tc.code, errs)
			}
			// Progress lines may come first; the error is one line, the last.
			lines := strings.Split(strings.TrimSpace(errs), "\n")
			last := lines[len(lines)-1]
			if strings.Count(errs, "fsd: ") != 1 || !strings.HasPrefix(last, "fsd: ") || !strings.Contains(last, tc.want) {
				t.Errorf("stderr should end in one error line containing %q: %q", tc.want, errs)
			}
		})
	}
}

func TestContextCommand(t *testing.T) {
	code, out, errs := fsd(t, "context", "../../examples/lifecycle/lifecycle.workflow.yaml")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"=== context (", "<catalog>", "id: weather", "=== tools: 1 (", "read_skill", "=== total: "} {
		if !strings.Contains(out, want) {
			t.Errorf("fsd context lacks %q:\n%s", want, out)
		}
	}
}

// write writes a file, creating its folder.
func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRunScriptAbsolutePath: a workflow's script: may be an absolute path
// (fsd validate accepts one), not only a path relative to the workflow;
// fsd run used to join it to the workflow's folder and not find it.
func TestRunScriptAbsolutePath(t *testing.T) {
	dir := t.TempDir()
	script, err := filepath.Abs("../../examples/hello/hello.script.yaml")
	if err != nil {
		t.Fatal(err)
	}
	skills, err := filepath.Abs("../../examples/hello/skills")
	if err != nil {
		t.Fatal(err)
	}
	wf := filepath.Join(dir, "abs.workflow.yaml")
	if err := os.WriteFile(wf, []byte("name: hello\nmodel: scripted\nscript: "+script+"\nskills: ["+skills+
		"]\nhost: {prompt: You welcome new colleagues.}\ninput: Welcome Ada to the team.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, want, _ := fsd(t, "run", "../../examples/hello/hello.workflow.yaml", "--runs-dir", t.TempDir())
	code, out, errs := fsd(t, "run", wf, "--runs-dir", t.TempDir())
	if code != 0 || out != want {
		t.Errorf("exit %d, answer %q, stderr %s; want exit 0 and %q", code, out, errs, want)
	}
}

// fsd context --agent prints a worker's first request: its agent's
// prompt, its catalog of the agent's skills:, the task message of the
// workflow's task for that agent, and read_skill among its tools.
func TestContextAgent(t *testing.T) {
	code, out, errs := fsd(t, "context", "testdata/workerskills/w.workflow.yaml", "--agent", "team/writer")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	golden.CheckString(t, filepath.Join("testdata", "workerskills", "context-agent.golden"), out)
	if code, _, errs := fsd(t, "context", "testdata/workerskills/w.workflow.yaml", "--agent", "team/nobody"); code != exitUsage || !strings.Contains(errs, "team/nobody") {
		t.Errorf("an unknown agent: exit %d: %s", code, errs)
	}
}
