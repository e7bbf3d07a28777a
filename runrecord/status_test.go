package runrecord_test

import (
	"testing"

	"github.com/fsdrun/fsd/runrecord"
)

// A run can still change while it runs or waits for an approval; every
// other status is an end.
func TestStatusLive(t *testing.T) {
	for _, tc := range []struct {
		s    runrecord.Status
		want bool
	}{
		{runrecord.Running, true},
		{runrecord.Waiting, true},
		{runrecord.Finished, false},
		{runrecord.Failed, false},
		{runrecord.Interrupted, false},
		{"", false},
	} {
		if got := tc.s.Live(); got != tc.want {
			t.Errorf("%q.Live() = %v, want %v", tc.s, got, tc.want)
		}
	}
}
