//go:build !unix

package tool

import "os/exec"

// killGroupOnCancel keeps os/exec's default on systems without process
// groups: a timeout or cancel kills the command itself.
func killGroupOnCancel(cmd *exec.Cmd) {}
