// Package testpar sets how many of a package's parallel tests run at once.
// Tests that mostly wait — on subprocesses, servers, a process's sleeps —
// leave a small machine's CPUs idle when only GOMAXPROCS of them run at
// once (go test's default); a package of such tests widens that in its
// TestMain. Under the race detector every test is CPU-bound already, so
// nothing is widened there, and a test whose deadlines a shared CPU could
// miss runs alone. It is imported only by tests; it does not choose which
// tests run in parallel.
package testpar
