// Package testlong decides whether a test run includes the long suites:
// fault injection (killed servers, partitions, lost stores), clusters, and
// seeded kill and chaos trials run many times. They are kept out of a plain
// `go test ./...` so it ends in a few minutes on a small machine; setting
// FSD_LONG_TESTS=1 runs them, and .ci/run always sets it (with -race).
// It is imported only by tests.
package testlong
