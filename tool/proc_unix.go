//go:build unix

package tool

import (
	"os/exec"
	"syscall"
)

// killGroupOnCancel puts the command in its own process group and makes a
// timeout or cancel kill the whole group, so a script's children do not
// linger after it.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
