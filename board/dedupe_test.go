package board

import (
	"fmt"
	"slices"
	"testing"
)

// dedupe keeps the first of each dependency, in order, on a short list
// and on one long enough to go through a map, and returns a list without
// repeats as it is.
func TestDedupe(t *testing.T) {
	long := make([]string, 40)
	for i := range long {
		long[i] = fmt.Sprint("t", i)
	}
	for _, tc := range []struct{ in, want []string }{
		{nil, nil},
		{[]string{"a", "b"}, []string{"a", "b"}},
		{[]string{"a", "b", "a", "c", "b"}, []string{"a", "b", "c"}},
		{append(slices.Clone(long), "t3", "t41", "t0"), append(slices.Clone(long), "t41")},
		{long, long},
	} {
		got := dedupe(tc.in)
		if !slices.Equal(got, tc.want) {
			t.Errorf("dedupe(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := dedupe(long); &got[0] != &long[0] {
		t.Error("a list without repeats was copied")
	}
}
