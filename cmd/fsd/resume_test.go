package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/keytest"
	"github.com/fsdrun/fsd/internal/testpar"
)

// TestMain lets the test binary stand in for the fsd binary, so the kill
// test can run fsd as a real subprocess without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("FSD_TEST_AS_MAIN") == "1" {
		main() // the process the fsd binary's main makes, collector's pace included
	}
	flag.Parse()
	testpar.Widen(minParallel)
	os.Exit(keytest.Main(m))
}

// minParallel is how many parallel tests run at once unless -parallel says
// otherwise. This package's slow tests mostly wait — on a subprocess's
// scripted sleeps, a NATS client's connect timeout, node or python
// starting, a kill moment — rather than compute. Not more: the examples'
// tools have timeouts (5s for the lifecycle's get_weather) that a starved
// CPU would trip.
const minParallel = 4

// parallelUnlessRace marks a test parallel except under the race
// detector: its runs have deadlines (a kill moment, a tool's timeout)
// that a CPU shared with another race-instrumented test can miss.
func parallelUnlessRace(t *testing.T) { testpar.UnlessRace(t) }

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
    run: {command: [sh, -c, 'printf "%s\n" "$1" >> "$SKILL_DIR/marks.log"; printf "marked %s" "$1"', mark, "{{.id}}"]}
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
sandbox: {write: [./skills/steps]}
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

// stepsWithoutSleeps is slowPipeline's script without its sleeps, for a
// run that needs its record or answer, not a moment to stop it at.
const stepsWithoutSleeps = "agents:\n  stepper:\n    - call: mark\n      args: {id: '{{.Task.ID}}'}\n    - say: '{{.Last}}'\n"

// kill -9 mid-board, then fsd resume: every task ran exactly once and the
// answer equals an uninterrupted run's.
func TestKillThenResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fsd as a subprocess for a few seconds")
	}
	parallelUnlessRace(t)
	// The uninterrupted run, for the expected answer; the sleeps give
	// the kill below its moment and change no answer, so it runs without.
	clean := t.TempDir()
	cleanWF := slowPipeline(t, clean)
	write(t, filepath.Join(clean, "slow.script.yaml"), stepsWithoutSleeps)
	code, want, errs := fsd(t, "run", cleanWF, "--runs-dir", filepath.Join(clean, "runs"))
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

// TestResumeRunsOnlyWhatFsdSealed: what a resume runs comes from what fsd
// sealed into run.json for the run, not from whatever run.json says: a
// record without digests, or naming another workflow (even an identical
// copy in another folder), is refused unless --force; an edited tool
// program is refused, named; and the untouched record resumes from
// another working folder.
func TestResumeRunsOnlyWhatFsdSealed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fsd as a subprocess")
	}
	t.Parallel()
	root := t.TempDir()
	for _, name := range []string{"proj", "other"} {
		copyDir(t, "../../examples/release", filepath.Join(root, name))
		if err := os.Chmod(filepath.Join(root, name, "skills/release/scripts/publish.sh"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Started from root with a relative path: run.json must not keep it so.
	proc, id, runs := waitForPendingOf(t, root, filepath.Join("proj", "release.workflow.yaml"))
	if err := proc.cmd.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := proc.exit(); code != 130 {
		t.Fatalf("exit %d after SIGINT:\n%s", code, proc.errb)
	}
	if code, out, errs := fsd(t, "approve", id, "--runs-dir", runs); code != exitOK {
		t.Fatalf("fsd approve: exit %d\n%s%s", code, out, errs)
	}
	runJSON := filepath.Join(runs, id, "run.json")
	orig, err := os.ReadFile(runJSON)
	if err != nil {
		t.Fatal(err)
	}
	tamper := func(change func(m map[string]any)) {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(orig, &m); err != nil {
			t.Fatal(err)
		}
		change(m)
		b, _ := json.Marshal(m)
		if err := os.WriteFile(runJSON, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		change func(m map[string]any)
		want   string
	}{
		{"no digests", func(m map[string]any) { delete(m, "digests") }, "no digests"},
		{"another workflow", func(m map[string]any) { m["workflow"] = filepath.Join(root, "other", "release.workflow.yaml") }, "seal does not verify"},
	} {
		tamper(tc.change)
		code, out, errs := fsd(t, "resume", id, "--runs-dir", runs)
		if code != exitProblems || !strings.Contains(errs, tc.want) || !strings.Contains(errs, "--force") {
			t.Fatalf("resume of a record with %s: exit %d, want %d saying %q\n%s%s", tc.name, code, exitProblems, tc.want, out, errs)
		}
	}
	if err := os.WriteFile(runJSON, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	program := filepath.Join(root, "proj", "skills/release/scripts/publish.sh")
	was, err := os.ReadFile(program)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(program, append(was, []byte("# edited\n")...), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errs := fsd(t, "resume", id, "--runs-dir", runs)
	if code != exitProblems || !strings.Contains(errs, "skills/release/scripts/publish.sh") {
		t.Fatalf("resume after the tool's program was edited: exit %d, want %d naming it\n%s%s", code, exitProblems, out, errs)
	}
	if err := os.WriteFile(program, was, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, stdout, stderr := fsdProc("resume", filepath.Join(runs, id))
	cmd.Dir = t.TempDir()
	if code := exitCode(cmd.Run()); code != exitOK || !strings.Contains(stdout.String(), "published 1.4.0 to stable") {
		t.Fatalf("resume from another folder: exit %d\n%s%s", code, stdout, stderr)
	}
}
