package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for the fsd binary, so the kill
// test can run fsd as a real subprocess without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("FSD_TEST_AS_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// slowPipeline writes a chain of five slow tasks; each marks a log file
// once through a command tool.
func slowPipeline(t *testing.T, dir string) string {
	t.Helper()
	skill := filepath.Join(dir, "skills", "steps")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(skill, "steps.skill.yaml"), `id: steps
name: Steps
description: Slow steps for the kill test.
version: 1.0.0
instructions: Mark your task.
tools:
  - name: mark
    description: Mark a task as done in marks.log.
    input: {type: object, properties: {id: {type: string}}, required: [id]}
    run: {command: [sh, -c, 'printf "%s\n" "$1" >> marks.log; printf "marked %s" "$1"', mark, "{{.id}}"]}
agents:
  stepper:
    prompt: Mark your task.
    tools: [mark]
`)
	write(t, filepath.Join(dir, "slow.script.yaml"), `agents:
  stepper:
    - sleep: 1s
      call: mark
      args: {id: '{{.Task.ID}}'}
    - say: '{{.Last}}'
`)
	wf := filepath.Join(dir, "slow.workflow.yaml")
	write(t, wf, `name: slow
model: scripted
script: slow.script.yaml
skills: [./skills]
limits: {concurrency: 1}
tasks:
  - {id: a, assignee: steps/stepper, goal: first}
  - {id: b, assignee: steps/stepper, goal: second, deps: [a]}
  - {id: c, assignee: steps/stepper, goal: third, deps: [b]}
  - {id: d, assignee: steps/stepper, goal: fourth, deps: [c]}
  - {id: e, assignee: steps/stepper, goal: fifth, deps: [d]}
input: go
`)
	return wf
}

// kill -9 mid-board, then fsd resume: every task ran exactly once and the
// answer equals an uninterrupted run's.
func TestKillThenResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fsd as a subprocess for a few seconds")
	}
	// The uninterrupted run, for the expected answer.
	clean := t.TempDir()
	code, want, errs := fsd(t, "run", slowPipeline(t, clean), "--runs-dir", filepath.Join(clean, "runs"))
	if code != exitOK {
		t.Fatalf("uninterrupted run: exit %d: %s", code, errs)
	}

	dir := t.TempDir()
	wf := slowPipeline(t, dir)
	runs := filepath.Join(dir, "runs")
	cmd := exec.Command(os.Args[0], "run", wf, "--runs-dir", runs)
	cmd.Env = append(os.Environ(), "FSD_TEST_AS_MAIN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until two tasks completed (the third is then in its model's
	// sleep, before its command runs), then kill -9.
	deadline := time.Now().Add(30 * time.Second)
	var runID string
	for time.Now().Before(deadline) {
		ids, _ := os.ReadDir(runs)
		if len(ids) == 1 {
			runID = ids[0].Name()
			ev, _ := os.ReadFile(filepath.Join(runs, runID, "events.jsonl"))
			if bytes.Count(ev, []byte(`"type":"task.completed"`)) >= 2 {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if runID == "" {
		t.Fatal("the run never started")
	}
	marks, _ := os.ReadFile(filepath.Join(dir, "skills", "steps", "marks.log"))
	if got := strings.Fields(string(marks)); len(got) < 2 || len(got) == 5 {
		t.Fatalf("killed at the wrong time: marks %q", got)
	}

	code, out, errs := fsd(t, "runs", "--runs-dir", runs)
	if code != exitOK || !strings.Contains(out, runID) || !strings.Contains(out, "interrupted") {
		t.Errorf("fsd runs: exit %d: %s%s", code, out, errs)
	}

	code, got, errs := fsd(t, "resume", runID, "--runs-dir", runs)
	if code != exitOK {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	if got != want {
		t.Errorf("resumed answer %q, uninterrupted %q", got, want)
	}
	marks, _ = os.ReadFile(filepath.Join(dir, "skills", "steps", "marks.log"))
	if got := strings.Join(strings.Fields(string(marks)), ","); got != "a,b,c,d,e" {
		t.Errorf("tasks ran %s, want each of a..e exactly once", got)
	}
	// Completed model calls were not sent again: across both processes
	// the record holds one request per step, as an uninterrupted run does
	// (5 tasks × 2 steps; the call in flight at the kill never answered).
	ev, _ := os.ReadFile(filepath.Join(runs, runID, "events.jsonl"))
	if n := bytes.Count(ev, []byte(`"type":"request"`)); n != 10 {
		t.Errorf("%d model requests across the run and its resume, want 10", n)
	}
	code, out, _ = fsd(t, "runs", "--runs-dir", runs)
	if code != exitOK || !strings.Contains(out, "finished") {
		t.Errorf("fsd runs after resume:\n%s", out)
	}
	code, _, errs = fsd(t, "resume", runID, "--runs-dir", runs)
	if code != exitProblems || !strings.Contains(errs, "already finished") {
		t.Errorf("resuming a finished run: exit %d: %s", code, errs)
	}
}
