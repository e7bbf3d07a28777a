//go:build !unix

package tool

import "os/exec"

// killGroupOnCancel keeps os/exec's default on systems without process
// groups: a timeout or cancel kills the command itself.
func killGroupOnCancel(cmd *exec.Cmd) {}

// killGroup has no group to kill without process groups.
func killGroup(cmd *exec.Cmd) {}
