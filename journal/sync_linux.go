//go:build linux

package journal

import (
	"os"
	"syscall"
)

// fdatasync makes f's data durable, and its size, but not its times:
// what a journal that only grows needs, for less than fsync costs.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
