package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// A run that failed mid-way (here: the model's API went down) resumes from
// its journal: journaled steps are not sent to the model again, a command
// that already ran does not run again, handles come out the same, and the
// run goes on live to its answer.
func TestResumeConversation(t *testing.T) {
	dir := t.TempDir()
	counter := filepath.Join(dir, "ran.log")
	s := skill("ops", "1.0.0", spec.ChannelHandle)
	s.Dir = dir
	s.Tools = append(s.Tools, spec.Tool{Name: "touch", Run: spec.ToolRun{Kind: spec.RunCommand,
		Command: []string{"sh", "-c", `printf x >> "$1"; printf ran`, "touch", counter}}})
	p := writable(project(s), dir)
	steps := []step{read("ops"), readSection("ops"), call("touch", nil), call("ops_setstate", map[string]string{"key": "k", "value": "v"})}
	down := errors.New("503 service unavailable")
	var calls atomic.Int32
	first := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		calls.Add(1)
		if req.Caller.Step < len(steps) {
			return steps[req.Caller.Step](req), nil
		}
		return nil, down
	})
	runs := t.TempDir()
	r, err := New(p, Options{Model: first, RunsDir: runs})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), "")
	if !errors.Is(err, down) {
		t.Fatalf("first run: %v", err)
	}

	j, err := LoadReplay(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var resumedCalls []int
	var sawHandle bool
	second := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		resumedCalls = append(resumedCalls, req.Caller.Step)
		// The state the replay rebuilt is there: the skill is loaded with
		// the same handle, its per-load state holds what step 4 set.
		sawHandle = strings.Contains(req.Context, `channel="handle" handle="h_`)
		return call("ops_state", map[string]string{"key": "k"})(req), nil
	})
	n := 0
	secondThenSay := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		n++
		if n == 1 {
			return second(ctx, req)
		}
		if r := lastResult(req); r.Text != "v" {
			t.Errorf("per-load state not rebuilt by the replay: %q", r.Text)
		}
		return &model.Response{Text: "resumed"}, nil
	})
	r2, err := New(p, Options{Model: secondThenSay, Resume: j})
	if err != nil {
		t.Fatal(err)
	}
	res2, err := r2.Execute(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if res2.Answer != "resumed" || res2.RunID != res.RunID || res2.Dir != res.Dir {
		t.Errorf("resumed run = %+v", res2)
	}
	if len(resumedCalls) != 1 || resumedCalls[0] != 4 {
		t.Errorf("the model was asked for steps %v, want only step 4 (0-based) and on", resumedCalls)
	}
	if !sawHandle {
		t.Error("the resumed request lost the loaded skill's handle")
	}
	if b, _ := os.ReadFile(counter); string(b) != "x" {
		t.Errorf("the command ran %d times, want once", len(b))
	}
	// The transcript on disk holds each step once.
	entries := readTranscript(t, res.Dir, "transcript.jsonl")
	reads := 0
	for _, e := range entries {
		if e.Message != nil && e.Message.Name == "read_skill" {
			reads++
		}
	}
	if reads != 1 {
		t.Errorf("transcript has %d read_skill results, want 1 (journal not rewritten)", reads)
	}
	if _, err := LoadReplay(res.Dir); !errors.Is(err, ErrNotResumable) {
		t.Errorf("a finished run loaded as resumable: %v", err)
	}
}

// A resume whose re-executed step answers differently from the journal
// (the skill changed version on disk) stops with an error saying where.
func TestResumeDivergence(t *testing.T) {
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	fail := errors.New("crash")
	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.Step == 0 {
			return read("aa")(req), nil
		}
		return nil, fail
	})
	r, _ := New(p, Options{Model: m, RunsDir: t.TempDir()})
	res, _ := r.Execute(context.Background(), "")
	j, err := LoadReplay(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	changed := project(skill("aa", "2.0.0", spec.ChannelHandle))
	// Without --force the resume refuses before anything runs.
	r2, _ := New(changed, Options{Model: m, Resume: j})
	_, err = r2.Execute(context.Background(), "")
	if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "workflow changed") {
		t.Fatalf("err = %v, want ErrChanged naming the workflow", err)
	}
	// With it, the replay notices where the run went another way.
	j, err = LoadReplay(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	r3, _ := New(changed, Options{Model: m, Resume: j, Force: true})
	_, err = r3.Execute(context.Background(), "")
	if err == nil || !strings.Contains(err.Error(), "diverged") || !strings.Contains(err.Error(), "read_skill") {
		t.Errorf("err = %v", err)
	}
}

// A crash mid-write leaves a torn last line in a transcript. Loading the
// journal cuts it off, so the resumed run appends after a whole line and
// the record reads back whole.
func TestResumeCutsTornTail(t *testing.T) {
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	crash := errors.New("crash")
	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.Step == 0 {
			return read("aa")(req), nil
		}
		return nil, crash
	})
	r, _ := New(p, Options{Model: m, RunsDir: t.TempDir()})
	res, _ := r.Execute(context.Background(), "")
	path := filepath.Join(res.Dir, "journal.jsonl")
	whole := readFile(t, path)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"gen":"host","seq":9,"time":"2026-01-01T00:00:00Z","kind":"mess`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	j, err := LoadReplay(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); string(got) != string(whole) {
		t.Fatalf("LoadReplay left the torn tail: file ends %q", got[max(len(got)-60, 0):])
	}
	r2, _ := New(p, Options{Model: model.Func(func(context.Context, *model.Request) (*model.Response, error) {
		return &model.Response{Text: "resumed"}, nil
	}), Resume: j})
	if _, err := r2.Execute(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	entries := readTranscript(t, res.Dir, "transcript.jsonl")
	if last := entries[len(entries)-1]; last.Message == nil || last.Message.Text != "resumed" {
		t.Errorf("the resumed answer is not the record's last entry: %+v", last)
	}
}

// A record from before journal.jsonl holds per-generator transcript files;
// a pipeline's has no host file, only tasks/. Loading it as an empty
// journal would run every completed task again: it is refused instead.
func TestResumeRefusesPreJournalRecord(t *testing.T) {
	for _, tc := range []struct{ name, file string }{
		{"conversation", "transcript.jsonl"},
		{"pipeline", "tasks/t1.jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte(`{"id":"old","status":"running","seed":"`+strings.Repeat("ab", 32)+`","workflow":"w.workflow.yaml"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Join(dir, "tasks"), 0o755)
			if err := os.WriteFile(filepath.Join(dir, tc.file), []byte(`{"time":"2026-01-01T00:00:00Z","message":{"role":"user","text":"hi"}}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.name == "conversation" {
				os.Remove(filepath.Join(dir, "tasks"))
			}
			j, err := LoadReplay(dir)
			if err == nil {
				j.Close()
				t.Fatal("a pre-journal record loaded as an empty journal")
			}
			if !errors.Is(err, ErrNotResumable) || !strings.Contains(err.Error(), "recorded by an older fsd") {
				t.Errorf("err = %v", err)
			}
		})
	}
}

// TestResumeDigestsSkillFiles: a resume refuses, naming the file, when a
// file that decides what a skill says or runs changed since the run
// started — its instructions-file, a program its command runs, a script
// under scripts/, a SKILL.md folder's resource — and resumes once it is
// as it was.
func TestResumeDigestsSkillFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"wf.workflow.yaml":                 "name: wf\nmodel: openai/y\nskills: [./skills]\nhost: {prompt: Help.}\ninput: go\n",
		"skills/ops/ops.skill.yaml":        "id: ops\nname: Ops\ndescription: Ops.\nversion: 1.0.0\ninstructions-file: HOWTO.md\ntools:\n  - name: act\n    description: Act.\n    run: {command: [sh, bin/act.sh, '{{.x}}']}\n",
		"skills/ops/HOWTO.md":              "# How\nAct.\n",
		"skills/ops/bin/act.sh":            "echo acted\n",
		"skills/ops/scripts/helper.py":     "print('help')\n",
		"skills/notes/SKILL.md":            "---\nname: notes\ndescription: Notes.\n---\nRead references/guide.md.\n",
		"skills/notes/references/guide.md": "# Guide\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, diags := spec.LoadProject(filepath.Join(dir, "wf.workflow.yaml"))
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	rec := crashedRun(t, p)
	for _, name := range []string{"skills/ops/HOWTO.md", "skills/ops/bin/act.sh", "skills/ops/scripts/helper.py", "skills/notes/references/guide.md"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(files[name]+"# edited\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := resume(t, p, rec, answers, Options{})
		if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), name) {
			t.Errorf("resume after %s was edited: %v; want ErrChanged naming it", name, err)
		}
		if err := os.WriteFile(path, []byte(files[name]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if res, _, err := resume(t, p, rec, answers, Options{}); err != nil || res.Answer != "done" {
		t.Errorf("resume with the files as they were: %v", err)
	}
}

// TestResumeDigestsScript: the scripted model's script decides what the
// model answers, so a resume refuses, naming it, once it was edited, and
// resumes once it is as it was.
func TestResumeDigestsScript(t *testing.T) {
	dir := t.TempDir()
	script := "host:\n  - say: done\n"
	files := map[string]string{
		"wf.workflow.yaml": "name: wf\nmodel: scripted\nscript: wf.script.yaml\nhost: {prompt: Help.}\ninput: go\n",
		"wf.script.yaml":   script,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, diags := spec.LoadProject(filepath.Join(dir, "wf.workflow.yaml"))
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	rec := crashedRun(t, p)
	path := filepath.Join(dir, "wf.script.yaml")
	if err := os.WriteFile(path, []byte(script+"  - say: more\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := resume(t, p, rec, answers, Options{}); !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "wf.script.yaml") {
		t.Errorf("resume after the script was edited: %v; want ErrChanged naming it", err)
	}
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, _, err := resume(t, p, rec, answers, Options{}); err != nil || res.Answer != "done" {
		t.Errorf("resume with the script as it was: %v", err)
	}
}
