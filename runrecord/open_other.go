//go:build !unix

package runrecord

import "os"

// openFlags: without O_NOFOLLOW and O_NONBLOCK, readRegular's Lstat and
// the opened file's Stat are what keep it to regular files.
const openFlags = os.O_RDONLY
