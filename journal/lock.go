package journal

import (
	"errors"
	"fmt"
	"os"
)

// ErrLocked is returned by Lock when another process holds the folder.
var ErrLocked = errors.New("run folder is locked by another fsd")

// Locked is an exclusive hold on a run folder. The kernel releases it when
// the holder exits, however it exits, so a killed run never leaves a stale
// lock behind.
type Locked struct {
	f *os.File
}

// Lock takes the exclusive lock of dir without waiting: a second writer of
// the same run gets ErrLocked at once instead of interleaving its lines
// with the first's.
//
// J1: one process writes a run's record.
func Lock(dir string) (*Locked, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := flock(f); err != nil {
		f.Close()
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return &Locked{f: f}, nil
}

// Unlock releases the lock; a nil Locked is a no-op.
func (l *Locked) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
