//go:build unix && !linux

package proc

// exited is false where there is no /proc to tell a zombie apart: signal
// 0's answer stands.
func exited(int) bool { return false }
