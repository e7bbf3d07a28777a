//go:build !unix

package engine

// processAlive cannot tell without signals; the run folder's lock is what
// keeps two writers apart.
func processAlive(int) bool { return false }
