//go:build unix && !linux

package tool

import "syscall"

// setDeathSignal does nothing where the kernel has no parent-death signal.
func setDeathSignal(*syscall.SysProcAttr) {}
