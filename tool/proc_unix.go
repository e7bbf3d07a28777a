//go:build unix

package tool

import (
	"os/exec"
	"syscall"
)

// killGroupOnCancel puts the command in its own process group and makes a
// timeout or cancel kill the whole group, so a script's children do not
// linger after it. On Linux the command also dies with fsd (deathSignal).
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// killGroup kills what is left of a finished command's process group: a
// child it started in the background (`sleep 30 &`) is not a result of
// the call and must not outlive it.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
