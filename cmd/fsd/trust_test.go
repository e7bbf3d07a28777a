package main

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
)

// trustTree builds a workflow whose skills come from its own folder and
// from a shared folder beside it:
//
//	base/wf/trust.workflow.yaml   skills: [./skills, ../shared]
//	base/wf/skills/local/         command tool `show_env` (env, declares FSD_DECLARED)
//	base/shared/remote/           command tool `touch_marker`, reply tool `remote_echo`
//
// and returns base and the path of the marker file touch_marker creates.
func trustTree(t *testing.T) (base, marker string) {
	t.Helper()
	base = t.TempDir()
	marker = filepath.Join(base, "marker")
	for _, d := range []string{"wf/skills/local", "shared/remote"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(base, "wf", "trust.workflow.yaml"),
		"name: trust\nmodel: scripted\nscript: trust.script.yaml\nskills: [./skills, ../shared]\nsandbox: {write: [..]}\nhost: {prompt: test}\ninput: go\n")
	write(t, filepath.Join(base, "wf", "trust.script.yaml"), `host:
  - call: read_skill
    args: {id: local}
  - call: show_env
  - call: read_skill
    args: {id: remote}
  - call: touch_marker
  - call: remote_echo
    args: {text: hi}
  - say: done
`)
	write(t, filepath.Join(base, "wf", "skills", "local", "local.skill.yaml"), `id: local
name: Local
description: A skill in the workflow's folder.
version: 1.0.0
channel: inline
instructions: Local.
tools:
  - name: show_env
    description: Prints the environment.
    run: {command: [env], env: [FSD_DECLARED]}
`)
	write(t, filepath.Join(base, "shared", "remote", "remote.skill.yaml"), `id: remote
name: Remote
description: A skill from a shared folder.
version: 1.0.0
channel: inline
instructions: Remote.
tools:
  - name: touch_marker
    description: Creates a file.
    run: {command: [touch, `+marker+`]}
  - name: remote_echo
    description: Echoes.
    run: {reply: "remote says {{.text}}"}
`)
	return base, marker
}

// eachFile calls f with the path and content of every file under root,
// and returns how many there were.
func eachFile(t *testing.T, root string, f func(path, text string)) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		b, err := os.ReadFile(p)
		f(p, string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// events parses a --events json stream.
func events(t *testing.T, out string) []event.Event {
	t.Helper()
	var evs []event.Event
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var e event.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("not a JSON line: %s", sc.Text())
		}
		evs = append(evs, e)
	}
	return evs
}

func toolResult(evs []event.Event, name string) (event.Event, bool) {
	for _, e := range evs {
		if e.Type == event.ToolResult && e.Tool == name {
			return e, true
		}
	}
	return event.Event{}, false
}

// A skill outside the workflow's folder loads and its reply tool works, but
// its command tool does not run until --trust covers its folder.
func TestUntrustedSkillCommandDoesNotRun(t *testing.T) {
	t.Parallel()
	base, marker := trustTree(t)
	wf := filepath.Join(base, "wf", "trust.workflow.yaml")
	remote := filepath.Join(base, "shared", "remote")

	code, out, errs := fsd(t, "run", wf, "--events", "json", "--runs-dir", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the untrusted skill's command ran")
	}
	evs := events(t, out)
	refused, ok := toolResult(evs, "touch_marker")
	if !ok || !refused.Error {
		t.Fatalf("touch_marker result: %+v", refused)
	}
	for _, want := range []string{"skill remote", "not trusted", "--trust " + remote} {
		if !strings.Contains(refused.Result, want) {
			t.Errorf("refusal lacks %q: %s", want, refused.Result)
		}
	}
	if echo, _ := toolResult(evs, "remote_echo"); echo.Error || echo.Result != "remote says hi" {
		t.Errorf("the untrusted skill's reply tool: %+v", echo)
	}
	if local, _ := toolResult(evs, "show_env"); local.Error || !strings.Contains(local.Result, "PATH=") {
		t.Errorf("the workflow folder's own skill did not run its command: %+v", local)
	}

	// --trust the shared folder (through a path with ".." in it): now it runs.
	code, _, errs = fsd(t, "run", wf, "--runs-dir", t.TempDir(), "--trust", filepath.Join(base, "wf", "..", "shared"))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the skill under --trust did not run its command")
	}
}

// A skill folder inside the workflow's folder that is a symlink to one
// outside it is judged where it really is: untrusted.
func TestSymlinkedSkillFolderIsNotTrusted(t *testing.T) {
	base, marker := trustTree(t)
	link := filepath.Join(base, "wf", "skills", "linked")
	if err := os.Symlink(filepath.Join(base, "shared", "remote"), link); err != nil {
		t.Skipf("symlinks not available: %v", err)
	}
	write(t, filepath.Join(base, "wf", "linked.workflow.yaml"),
		"name: linked\nmodel: scripted\nscript: linked.script.yaml\nskills: [./skills/linked/remote.skill.yaml]\nhost: {prompt: test}\ninput: go\n")
	write(t, filepath.Join(base, "wf", "linked.script.yaml"),
		"host:\n  - call: read_skill\n    args: {id: remote}\n  - call: touch_marker\n  - say: done\n")
	code, out, errs := fsd(t, "run", filepath.Join(base, "wf", "linked.workflow.yaml"), "--events", "json", "--runs-dir", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a skill folder symlinked from outside ran its command")
	}
	if r, _ := toolResult(events(t, out), "touch_marker"); !r.Error || !strings.Contains(r.Result, "not trusted") {
		t.Errorf("touch_marker result: %+v", r)
	}
}

func TestTrustFlagErrors(t *testing.T) {
	base, _ := trustTree(t)
	wf := filepath.Join(base, "wf", "trust.workflow.yaml")
	missing := filepath.Join(base, "nope")
	file := filepath.Join(base, "wf", "trust.script.yaml")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"run, missing folder", []string{"run", wf, "--trust", missing}, "--trust " + missing + ": no such file or directory"},
		{"run, a file", []string{"run", wf, "--trust", file}, "--trust " + file + ": not a folder"},
		{"context, missing folder", []string{"context", wf, "--trust", missing}, "--trust " + missing + ": no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := fsd(t, tc.args...)
			if code != exitUsage || !strings.HasPrefix(errs, "fsd: "+tc.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errs, exitUsage, tc.want)
			}
		})
	}
	if code, _, errs := fsd(t, "context", wf, "--trust", filepath.Join(base, "shared")); code != exitOK {
		t.Errorf("fsd context --trust: exit %d: %s", code, errs)
	}
}

// A secret in fsd's environment never reaches a tool process, a log line,
// an event, a recording or the run record; a variable the tool declares
// does reach it, which shows the tool ran and its output was recorded
// (its value masked there, as every value a tool is given is).
func TestSecretsStayOutOfToolsLogsEventsAndRecords(t *testing.T) {
	const secret = "sk-fsd-test-5ecret-9f8e7d6c5b4a"
	t.Setenv("OPENAI_API_KEY", secret)
	t.Setenv("ANTHROPIC_API_KEY", secret)
	t.Setenv("FSD_TEST_TOKEN", secret)
	t.Setenv("FSD_DECLARED", "declared-value-visible")
	base, _ := trustTree(t)
	runs := t.TempDir()
	code, out, errs := fsd(t, "run", filepath.Join(base, "wf", "trust.workflow.yaml"),
		"--events", "json", "-v", "--runs-dir", runs, "--record-cassette", filepath.Join(runs, "exchange.jsonl"))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	env, ok := toolResult(events(t, out), "show_env")
	if !ok || env.Error {
		t.Fatalf("show_env did not run: %+v", env)
	}
	for _, want := range []string{"PATH=", "FSD_DECLARED=[REDACTED]"} {
		if !strings.Contains(env.Result, want) {
			t.Errorf("the tool's environment lacks %s:\n%s", want, env.Result)
		}
	}
	for _, name := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "FSD_TEST_TOKEN"} {
		if strings.Contains(env.Result, name) {
			t.Errorf("the tool inherited %s", name)
		}
	}
	if strings.Contains(env.Result, secret) {
		t.Error("the secret reached the tool process")
	}
	if strings.Contains(out, secret) {
		t.Error("the secret is in the event stream")
	}
	if strings.Contains(errs, secret) {
		t.Error("the secret is in the logs")
	}
	files := eachFile(t, runs, func(p, text string) {
		if strings.Contains(text, secret) {
			t.Errorf("the secret is in %s", p)
		}
	})
	if files < 3 {
		t.Errorf("only %d files under the runs dir: nothing was recorded", files)
	}
}
