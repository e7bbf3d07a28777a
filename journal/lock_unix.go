//go:build unix

package journal

import (
	"errors"
	"os"
	"syscall"
)

func flock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}

// LocksHold says Lock excludes other processes here: whether a process
// holds a run folder is told by its lock.
const LocksHold = true
