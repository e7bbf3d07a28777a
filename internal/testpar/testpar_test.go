package testpar

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

// Widen raises -test.parallel only where the command line left it and
// the race detector is off, and never lowers it.
func TestWiden(t *testing.T) {
	p := flag.Lookup("test.parallel")
	was := p.Value.String()
	defer func() { _ = p.Value.Set(was) }()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })

	_ = p.Value.Set("1")
	Widen(runtime.GOMAXPROCS(0) + 3)
	want := "1"
	if !set && !Race {
		want = strconv.Itoa(runtime.GOMAXPROCS(0) + 3)
	}
	if got := p.Value.String(); got != want {
		t.Errorf("-test.parallel after Widen: %s, want %s (set on the command line %v, race %v)", got, want, set, Race)
	}
	_ = p.Value.Set("1")
	Widen(runtime.GOMAXPROCS(0))
	if got := p.Value.String(); got != "1" {
		t.Errorf("Widen to GOMAXPROCS changed -test.parallel to %s", got)
	}
}
