//go:build !unix

package proc

import "os/exec"

// ownGroup keeps os/exec's default where there are no process groups: a
// cancel or timeout kills the program itself.
func ownGroup(*exec.Cmd) {}

// KillGroup kills the program itself, having no group to kill.
func KillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// Alive cannot tell without signals and says no; the run folder's lock
// is what keeps two writers apart.
func Alive(int) bool { return false }
