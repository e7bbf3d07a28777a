package testlong

import (
	"os"
	"testing"
)

// Env is the environment variable that turns the long suites on when it
// is "1".
const Env = "FSD_LONG_TESTS"

// Enabled reports whether the long suites run.
func Enabled() bool { return os.Getenv(Env) == "1" }

// Skip skips t unless the long suites run, saying how to run it.
func Skip(t testing.TB) {
	t.Helper()
	if !Enabled() {
		t.Skip("long: set " + Env + "=1 to run it (.ci/run does)")
	}
}

// Runs is how many seeded trials a repeated test makes: short by default,
// long when the long suites run. Either way a few trials cover each kind
// of trial; the long count is what finds the rare interleavings.
func Runs(short, long int) int {
	if Enabled() {
		return long
	}
	return short
}
