// Package golden compares test output with golden files under testdata and,
// with -update, rewrites them. It owns the one -update flag the module's
// golden tests share, so a single `go test PKGS -update` regenerates every
// golden file of those packages; it is imported only by tests. (A test
// package that does not import it rejects -update, as `go test` passes the
// flag to every test binary.)
//
// It does not produce the output (each test renders its own) and does not
// decide what is compared: a test that needs to normalise paths or times
// does so before calling Check.
package golden
