package testpar

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

// Widen raises -test.parallel to n, when the command line did not set it
// and GOMAXPROCS is lower, except under the race detector. Call it from
// TestMain after flag.Parse.
func Widen(n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if p := flag.Lookup("test.parallel"); p != nil && !set && !Race && runtime.GOMAXPROCS(0) < n {
		_ = p.Value.Set(strconv.Itoa(n))
	}
}

// UnlessRace marks t parallel except under the race detector: for a test
// with deadlines (a kill moment, a tool's timeout) that a CPU shared with
// another race-instrumented test can miss.
func UnlessRace(t *testing.T) {
	if !Race {
		t.Parallel()
	}
}
