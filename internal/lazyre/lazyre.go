package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr on its first call and returns
// the same *regexp.Regexp from then on (safe for concurrent use). Like
// regexp.MustCompile it panics on a bad expr, at that first call: a test
// that reaches the pattern catches it. Z2: nothing is compiled at start.
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
