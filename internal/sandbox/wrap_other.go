//go:build !linux

package sandbox

import (
	"fmt"
	"os/exec"
	"runtime"
)

// Backend answers, outside Linux, that no sandbox can be had: fsd's
// sandbox needs Linux's namespaces and Landlock (or bwrap).
func Backend() (string, error) { return "", unavailableHere() }

// Wrap fails closed outside Linux: a program of a skill runs only under
// a workflow's `sandbox: off`.
func Wrap(cmd *exec.Cmd, p Policy) (cleanup func(), err error) { return nil, unavailableHere() }

func unavailableHere() error {
	return fmt.Errorf("%w: fsd's sandbox needs Linux (namespaces and Landlock, or bwrap), and this is %s; set `sandbox: off` in the workflow to run its programs unconfined", ErrUnavailable, runtime.GOOS)
}

func procBound() string { return "none" }
