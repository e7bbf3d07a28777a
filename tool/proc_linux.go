//go:build linux

package tool

import "syscall"

// setDeathSignal makes the kernel kill the command when fsd dies, however
// it dies (kill -9 included), so a resumed run never races a tool process
// the interrupted run left behind. It reaches the command itself, not
// processes the command started: those die with the group when fsd is
// alive to kill it (a cancel, a timeout, the command's exit, a signal fsd
// handles), and outlive a kill -9 of fsd until they exit.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
