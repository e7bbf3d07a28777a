package runrecord_test

import (
	"testing"
	"time"

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

// A run that stopped to wait for an approval (it wrote when it stopped)
// still waits when no process holds it, and is not going; a waiting run
// whose process died without writing is interrupted.
func TestStoppedWaitingRun(t *testing.T) {
	stopped := runrecord.Summary{Status: runrecord.Waiting, Finished: time.Now(), Pending: []runrecord.PendingCall{{Call: "host/s1/c1"}}}
	if got := runrecord.Current(t.TempDir(), stopped); got != runrecord.Waiting {
		t.Errorf("Current of a stopped waiting run = %s, want waiting", got)
	}
	if stopped.Going() {
		t.Error("a run that stopped to wait is going")
	}
	died := runrecord.Summary{Status: runrecord.Waiting, Pending: stopped.Pending}
	if got := runrecord.Current(t.TempDir(), died); got != runrecord.Interrupted {
		t.Errorf("Current of a waiting run nobody holds = %s, want interrupted", got)
	}
	if !died.Going() {
		t.Error("a waiting run with its process up (as written) is not going")
	}
}
