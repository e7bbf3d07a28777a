package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hangWorkflow is a pipeline whose one task calls a tool that writes its
// pid and hangs.
func hangWorkflow(t *testing.T, dir string) (wf, pidFile string) {
	t.Helper()
	skill := filepath.Join(dir, "skills", "hang")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile = filepath.Join(dir, "tool.pid")
	write(t, filepath.Join(skill, "hang.skill.yaml"), `id: hang
name: Hang
description: Hangs.
version: 1.0.0
instructions: Hang.
tools:
  - name: hang
    description: Hangs.
    run: {command: [sh, -c, 'echo $$ > `+pidFile+`; exec sleep 30']}
agents:
  hanger:
    prompt: Hang.
    tools: [hang]
`)
	write(t, filepath.Join(dir, "hang.script.yaml"), "agents:\n  hanger:\n    - call: hang\n    - say: done\n")
	wf = filepath.Join(dir, "hang.workflow.yaml")
	// Unconfined: the test signals the tool's pid, which in a sandbox is
	// its PID namespace's (the sandbox's own tests kill its calls).
	write(t, wf, "name: hang\nmodel: scripted\nscript: hang.script.yaml\nskills: [./skills]\nsandbox: off\ntasks:\n  - {id: h, assignee: hang/hanger, goal: hang}\ninput: go\n")
	return wf, pidFile
}

// SIGINT, SIGTERM and SIGHUP interrupt a run alike: its tool's process is
// killed, run.json says interrupted, fsd exits 128+signal and says how to
// resume.
func TestSignalsInterrupt(t *testing.T) {
	if testing.Short() || runtime.GOOS == "windows" {
		t.Skip("runs fsd as a subprocess")
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGINT, "SIGINT", 130}, {syscall.SIGTERM, "SIGTERM", 143}, {syscall.SIGHUP, "SIGHUP", 129}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			wf, pidFile := hangWorkflow(t, dir)
			runs := filepath.Join(dir, "runs")
			cmd, _, errb := fsdProc("run", wf, "--runs-dir", runs)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var pid int
			for range 1000 {
				b, _ := os.ReadFile(pidFile)
				if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					pid = p
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if pid == 0 {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("the tool never started")
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			if code := exitCode(cmd.Wait()); code != tc.code {
				t.Errorf("exit %d, want %d: %s", code, tc.code, errb)
			}
			ids, _ := os.ReadDir(runs)
			if len(ids) != 1 {
				t.Fatalf("%d runs", len(ids))
			}
			id := ids[0].Name()
			want := "fsd: run interrupted (" + tc.name + "); resume it with: fsd resume " + id + " --runs-dir " + runs
			if got := lastLine(errb.String()); got != want {
				t.Errorf("stderr ends %q, want %q", got, want)
			}
			var sum struct{ Status string }
			if err := json.Unmarshal(readAll(t, filepath.Join(runs, id, "run.json")), &sum); err != nil || sum.Status != "interrupted" {
				t.Errorf("run.json status %q (%v)", sum.Status, err)
			}
			if err := syscall.Kill(pid, 0); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("the tool process %d outlived the interrupted run", pid)
			}
			code, out, _ := fsd(t, "runs", "--runs-dir", runs)
			if code != exitOK || !strings.Contains(out, "interrupted") {
				t.Errorf("fsd runs:\n%s", out)
			}
		})
	}
}

// finishedRun runs wf to its answer, then makes its record look like a
// run that crashed while its call of tool was running: status running,
// the journal cut before the call's result.
func crashedWhileCalling(t *testing.T, wf, runs, tool string, args ...string) string {
	t.Helper()
	code, _, errs := fsd(t, append([]string{"run", wf, "--runs-dir", runs}, args...)...)
	if code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	ids, _ := os.ReadDir(runs)
	dir := filepath.Join(runs, ids[0].Name())
	tr := filepath.Join(dir, "journal.jsonl")
	b, _ := os.ReadFile(tr)
	var keep []byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct {
			Gen     string
			Message struct{ Role, Name string }
		}
		json.Unmarshal(sc.Bytes(), &e)
		// The host's call (a pipeline has no host lines: nothing is cut).
		if e.Gen == "host" && e.Message.Role == "tool" && e.Message.Name == tool {
			break
		}
		keep = append(keep, sc.Bytes()...)
		keep = append(keep, '\n')
	}
	if b != nil {
		if err := os.WriteFile(tr, keep, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var sum map[string]any
	json.Unmarshal(readAll(t, filepath.Join(dir, "run.json")), &sum)
	sum["status"], sum["pid"] = "running", 0
	nb, _ := json.Marshal(sum)
	if err := os.WriteFile(filepath.Join(dir, "run.json"), nb, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Resume takes trust from its own command line only: a run.json that
// says `"trust": "/"` does not let an untrusted skill run its command.
func TestResumeDoesNotTrustTheRecord(t *testing.T) {
	t.Parallel()
	base, marker := trustTree(t)
	wf := filepath.Join(base, "wf", "trust.workflow.yaml")
	runs := t.TempDir()
	dir := crashedWhileCalling(t, wf, runs, "touch_marker")
	var sum map[string]any
	json.Unmarshal(readAll(t, filepath.Join(dir, "run.json")), &sum)
	sum["meta"] = map[string]string{"trust": "/"}
	nb, _ := json.Marshal(sum)
	os.WriteFile(filepath.Join(dir, "run.json"), nb, 0o644)

	code, out, errs := fsd(t, "resume", filepath.Base(dir), "--runs-dir", runs, "--events", "json")
	if code != exitOK {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the untrusted skill's command ran on resume")
	}
	if !strings.Contains(errs, "not re-applying the run's --trust /") {
		t.Errorf("stderr does not say which recorded trust it ignored: %s", errs)
	}
	if r, ok := toolResult(events(t, out), "touch_marker"); !ok || !r.Error || !strings.Contains(r.Result, "not trusted") {
		t.Errorf("touch_marker on resume: %+v", r)
	}
}

// A resume refuses when a tool's command (or any manifest, the script,
// the workflow) changed since the run started, naming it; --force runs
// what is there now.
func TestResumeRefusesChangedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wf := slowPipeline(t, dir)
	// No sleeps: the test needs the record, not the timing.
	write(t, filepath.Join(dir, "slow.script.yaml"), stepsWithoutSleeps)
	runs := filepath.Join(dir, "runs")
	rec := crashedWhileCalling(t, wf, runs, "never-a-host-tool")
	manifest := filepath.Join(dir, "skills", "steps", "steps.skill.yaml")
	b := readAll(t, manifest)
	write(t, manifest, strings.Replace(string(b), `printf "marked %s"`, `printf "MARKED %s"`, 1))

	code, _, errs := fsd(t, "resume", filepath.Base(rec), "--runs-dir", runs)
	want := regexp.MustCompile(`^fsd: resume refused: the run's files changed since it started: skill steps \(skills/steps/steps.skill.yaml\) changed; resume with --force`)
	if code != exitProblems || !want.MatchString(lastLine(errs)) {
		t.Fatalf("resume after a changed command: exit %d: %s", code, errs)
	}
	code, _, errs = fsd(t, "resume", filepath.Base(rec), "--runs-dir", runs, "--force")
	if code != exitOK {
		t.Fatalf("resume --force: exit %d: %s", code, errs)
	}
}
