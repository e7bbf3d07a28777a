//go:build !unix

package journal

import "os"

// flock is not available: the process check of fsd resume is what is left.
func flock(*os.File) error { return nil }

// LocksHold says Lock excludes no other process here: readers tell a
// live run by its recorded process id instead.
const LocksHold = false
