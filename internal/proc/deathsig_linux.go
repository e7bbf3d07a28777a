//go:build linux

package proc

import "syscall"

// deathSignal makes the kernel kill the program when fsd dies, however it
// dies (kill -9 included), so a resumed run never races a tool the
// interrupted run left behind. It reaches the program itself, not what
// the program started: those die with the group when fsd is alive to kill
// it (a cancel, a timeout, the program's exit, a signal fsd handles), and
// outlive a kill -9 of fsd until they exit.
func deathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
