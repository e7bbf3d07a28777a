//go:build unix && !linux

package proc

import "syscall"

// deathSignal does nothing where the kernel has no parent-death signal.
func deathSignal(*syscall.SysProcAttr) {}
