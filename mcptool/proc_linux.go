//go:build linux

package mcptool

import (
	"os/exec"
	"syscall"
)

// detach puts the server in its own process group (so closing it can kill
// what it started) and has the kernel kill it if fsd dies.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
