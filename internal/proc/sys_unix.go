//go:build unix

package proc

import (
	"errors"
	"os/exec"
	"syscall"
)

// ownGroup puts the program in its own process group and makes a cancel
// or timeout kill the whole group, so a script's children do not linger
// after it. On Linux the program also dies with fsd (deathSignal).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	deathSignal(cmd.SysProcAttr)
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// KillGroup kills what is left of a started program's process group: a
// child it left in the background (`sleep 30 &`) is not a result of the
// call and must not outlive it.
//
// J6: what a program started dies with its call.
func KillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// Alive reports whether a process with pid exists and has not exited.
// One that exists as another user's (EPERM: fsd may not signal it) is
// alive: a run whose writer is alive must not be taken over or shown as
// interrupted. A zombie is not: it has exited and only waits to be
// reaped.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	return aliveAfter(syscall.Kill(pid, 0)) && !exited(pid)
}

// aliveAfter reads signal 0's answer.
func aliveAfter(err error) bool {
	return err == nil || errors.Is(err, syscall.EPERM)
}
