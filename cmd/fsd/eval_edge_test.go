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
	cmd, out, errb := fsdProc("eval", suite, "--runs-dir", runs)
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
