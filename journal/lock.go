package journal

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// ErrLocked is returned by Lock when another process holds the folder.
var ErrLocked = errors.New("run folder is locked by another fsd")

// Locked is an exclusive hold on a run folder. The kernel releases it when
// the holder exits, however it exits, so a killed run never leaves a stale
// lock behind.
type Locked struct {
	f *os.File
}

// lockTries and lockPause bound how long Lock waits for a lock held for
// an instant: a reader asking whether a run is live takes the lock and
// gives it back at once (runrecord.Held, with TryLock), and a writer
// starting just then must not take that for another writer.
const (
	lockTries = 5
	lockPause = 10 * time.Millisecond
)

// Lock takes the exclusive lock of dir without waiting for a holder: a
// second writer of the same run gets ErrLocked (within lockTries ×
// lockPause) instead of interleaving its lines with the first's.
//
// J1: one process writes a run's record.
func Lock(dir string) (*Locked, error) {
	l, err := TryLock(dir)
	for i := 1; i < lockTries && errors.Is(err, ErrLocked); i++ {
		time.Sleep(lockPause)
		l, err = TryLock(dir)
	}
	return l, err
}

// TryLock is Lock tried once: ErrLocked at once while another process
// holds dir.
func TryLock(dir string) (*Locked, error) {
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
