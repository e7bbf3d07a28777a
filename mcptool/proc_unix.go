//go:build unix && !linux

package mcptool

import (
	"os/exec"
	"syscall"
)

// detach puts the server in its own process group, so closing it can kill
// what it started. (Only Linux can have it killed when fsd dies.)
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
