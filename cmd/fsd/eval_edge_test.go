package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Ctrl-C stops an eval as it stops a run: exit 130 (143 for SIGTERM),
// one line saying so, and no run started after the signal.
func TestEvalInterrupted(t *testing.T) {
	if testing.Short() || runtime.GOOS == "windows" {
		t.Skip("runs fsd as a subprocess")
	}
	dir := t.TempDir()
	wf, pidFile := hangWorkflow(t, dir)
	suite := filepath.Join(dir, "hang.eval.yaml")
	write(t, suite, "workflow: "+filepath.Base(wf)+"\nrepeat: 3\ncases:\n  - id: hang\n    input: go\n    expect: [{contains: done}]\n")
	runs := filepath.Join(dir, "runs")
	cas := filepath.Join(dir, "cassettes")
	cmd, out, errb := fsdProc("eval", suite, "--runs-dir", runs, "--record", cas)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := false
	for range 1000 {
		b, _ := os.ReadFile(pidFile)
		if _, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			started = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !started {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the tool never started")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(cmd.Wait()); code != 130 {
		t.Errorf("exit %d, want 130: %s", code, errb)
	}
	if got := strings.TrimSpace(errb.String()); strings.Count(got, "\n") > 0 || !strings.HasPrefix(got, "fsd: eval interrupted (SIGINT)") {
		t.Errorf("stderr %q, want one line saying SIGINT interrupted the eval", got)
	}
	if out.Len() != 0 {
		t.Errorf("an interrupted eval printed a report it did not finish:\n%s", out)
	}
	if ids, _ := os.ReadDir(runs); len(ids) != 1 {
		t.Errorf("%d run records, want 1: no run starts after the signal", len(ids))
	}
	// The interrupted run's cassette stops mid-run: it is not kept, so a
	// replay says it is missing rather than that the requests diverged.
	if files, _ := os.ReadDir(cas); len(files) != 0 {
		t.Errorf("cassettes %v kept of a recording cut by the signal", files)
	}
}

// --repeat is bounded as a suite's repeat: is (at most 100): a huge one
// is a usage error, not an allocation that kills fsd.
func TestEvalRepeatBounded(t *testing.T) {
	t.Parallel()
	dir := evalProject(t)
	code, out, errOut := fsd(t, "eval", filepath.Join(dir, "t.eval.yaml"), "--model", "standin", "--repeat", "1000000000000")
	if code != exitUsage || !strings.Contains(errOut, "--repeat 1000000000000") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 || out != "" {
		t.Errorf("exit %d, stderr %q, stdout %q; want 2 and one line", code, errOut, out)
	}
}

// A case id is the case's name in the report, in --baseline and in its
// cassettes' names, so two suites (or a skill-creator evals.json named
// twice) cannot share one: the second is refused where it is.
func TestEvalCaseIDsUniqueAcrossSuites(t *testing.T) {
	t.Parallel()
	dir := evalProject(t)
	for _, n := range []string{"a", "b"} {
		write(t, filepath.Join(dir, n+".eval.yaml"), "workflow: wf.workflow.yaml\ncases:\n  - id: greet\n    input: say hello to Ada\n    expect: [{contains: Ada}]\n")
	}
	code, out, errOut := fsd(t, "eval", filepath.Join(dir, "a.eval.yaml"), filepath.Join(dir, "b.eval.yaml"), "--model", "standin", "--repeat", "1",
		"--runs-dir", filepath.Join(dir, ".fsd", "runs"))
	want := "fsd: " + filepath.Join(dir, "b.eval.yaml") + `:3:5: case id "greet" is used twice (first at ` + filepath.Join(dir, "a.eval.yaml") + ":3:5)"
	if code != exitProblems || !strings.HasPrefix(errOut, want) || out != "" {
		t.Errorf("exit %d, stderr %q, stdout %q; want 1 and %q", code, errOut, out, want)
	}
	// The same suite named twice, as a folder and a file in it, is read once.
	os.Remove(filepath.Join(dir, "b.eval.yaml"))
	_, out, errOut = fsd(t, "eval", dir, filepath.Join(dir, "a.eval.yaml"), "--model", "standin", "--repeat", "1", "--runs-dir", filepath.Join(dir, ".fsd", "runs"))
	if strings.Contains(errOut, "used twice") || strings.Count(out, " greet ") != 1 {
		t.Errorf("a folder and a file in it: stderr %q, want a.eval.yaml read once:\n%s", errOut, out)
	}
}

// A cassette answers as the model it recorded: replayed with another
// --model, the report would name a model that never answered, so each
// run fails saying which model the cassette holds.
func TestEvalReplayOtherModel(t *testing.T) {
	t.Parallel()
	dir := evalProject(t)
	suite := filepath.Join(dir, "t.eval.yaml")
	runs := filepath.Join(dir, ".fsd", "runs")
	cas := filepath.Join(dir, "cassettes")
	if code, _, errOut := fsd(t, "eval", suite, "--model", "standin", "--repeat", "1", "--runs-dir", runs, "--record", cas); code != exitOK {
		t.Fatalf("record: exit %d: %s", code, errOut)
	}
	if code, _, errOut := fsd(t, "eval", suite, "--model", "standin", "--repeat", "1", "--runs-dir", runs, "--replay", cas); code != exitOK {
		t.Errorf("replay with the recorded --model: exit %d: %s", code, errOut)
	}
	code, _, errOut := fsd(t, "eval", suite, "--model", "openai/gpt-4o", "--repeat", "1", "--runs-dir", runs, "--replay", cas)
	if code != exitProblems || !strings.Contains(errOut, "recorded with the model standin, not --model openai/gpt-4o") {
		t.Errorf("replay with another --model: exit %d, stderr %q; want 1 naming both models", code, errOut)
	}
}

// -o that names a folder is refused before any run; a page that cannot
// be written (its folder cannot be made) fails the eval, but only after
// stdout's report, so the runs' results are not lost with it.
func TestEvalOutputUnwritable(t *testing.T) {
	t.Parallel()
	dir := evalProject(t)
	suite := filepath.Join(dir, "t.eval.yaml")
	runs := filepath.Join(dir, ".fsd", "runs")
	code, out, errOut := fsd(t, "eval", suite, "--model", "standin", "--repeat", "1", "--runs-dir", runs, "-o", dir)
	if ids, _ := os.ReadDir(runs); code != exitUsage || len(ids) != 0 || !strings.Contains(errOut, "-o "+dir+": a folder") {
		t.Errorf("-o a folder: exit %d, %d runs, stderr %q; want 2 before any run", code, len(ids), errOut)
	}
	page := filepath.Join(suite, "eval.html") // under a file: its folder cannot be made
	code, out, errOut = fsd(t, "eval", suite, "--model", "standin", "--repeat", "1", "--runs-dir", runs, "-o", page)
	if code != exitProblems || !strings.Contains(out, "trigger queries passed") || !strings.HasPrefix(errOut, "fsd: -o "+page) {
		t.Errorf("-o unwritable: exit %d, stderr %q, stdout\n%s\nwant 1 after the text report", code, errOut, out)
	}
}
