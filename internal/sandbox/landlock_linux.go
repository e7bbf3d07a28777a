package sandbox

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Landlock system calls, made on the calling thread only. go-landlock
// is not used: its syscall package imports psx, which under cgo wraps
// pthread_create for the whole binary, and its RestrictPaths confines
// every thread, which fails in a binary that links cgo.

func landlockABI() int {
	r, _, e := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0
	}
	return int(r)
}

func landlockCreate(attr *unix.LandlockRulesetAttr) (int, error) {
	r, _, e := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(attr)), unsafe.Sizeof(*attr), 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

func landlockAddPath(ruleset, fd int, access uint64) error {
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	_, _, e := syscall.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func landlockRestrictSelf(ruleset int) error {
	_, _, e := syscall.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
