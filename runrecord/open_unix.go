//go:build unix

package runrecord

import (
	"os"
	"syscall"
)

// openFlags open a file a record reader does not trust: never through a
// symlink, and without waiting for a writer (a FIFO opens at once).
const openFlags = os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK
