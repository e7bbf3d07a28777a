//go:build unix

package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

func TestRunning(t *testing.T) {
	if !Running(os.Getpid()) {
		t.Error("this process does not run")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	if !Running(cmd.Process.Pid) {
		t.Error("a sleeping child does not run")
	}
	_ = cmd.Process.Kill()
	// Not reaped yet: a zombie, which runs nothing. (Without /proc, only
	// the reaped process is known to be gone.)
	if runtime.GOOS == "linux" && !Gone(cmd.Process.Pid) {
		t.Error("a killed child still runs")
	}
	_ = cmd.Wait()
	if Running(cmd.Process.Pid) {
		t.Error("a reaped child runs")
	}
}

func TestReadPid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command("sh", "-c", `echo $$ > "$0"; exec sleep 30`, path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if got := ReadPid(t, path); got != cmd.Process.Pid {
		t.Errorf("ReadPid = %d, want %d", got, cmd.Process.Pid)
	}
}
