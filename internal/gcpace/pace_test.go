package gcpace

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// gogc is the collector's GOGC now, as the runtime reports it.
func gogc(t *testing.T) uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Skip("this runtime does not report /gc/gogc:percent")
	}
	return s[0].Value.Uint64()
}

// TestGCPercent (I10): the goal GOGC gives, live × (1 + GOGC/100), is
// the floor while twice the live heap is below it, and twice the live
// heap (GOGC=100) from there on; and the runtime's smallest goal, 4 MiB
// × GOGC/100, never passes the floor.
func TestGCPercent(t *testing.T) {
	const floor = gcFloor
	for _, live := range []uint64{0, 1, 1 << 20, 3 << 20, 4 << 20, 5 << 20, 7<<20 + 1, 8 << 20, 10 << 20, 16 << 20, 1 << 30} {
		p := gcPercent(live, floor)
		if p < 100 {
			t.Errorf("live %d: GOGC %d, below the default", live, p)
		}
		if min := uint64(4<<20) * uint64(p) / 100; min > floor {
			t.Errorf("live %d: GOGC %d puts the runtime's smallest goal at %d, past the floor %d", live, p, min, floor)
		}
		goal := live + live*uint64(p)/100
		switch {
		case 2*live >= floor && p != 100:
			t.Errorf("live %d (half the floor or more): GOGC %d, want 100", live, p)
		case live >= 4<<20 && 2*live < floor && (goal < floor || goal > floor+live/100+1):
			t.Errorf("live %d: GOGC %d sets the goal at %d, want the floor %d", live, p, goal, floor)
		}
	}
}

// TestPaceGC (I10): in a process without GOGC in its environment the
// collector runs above GOGC=100 while the heap is small, and back at 100
// once a collection leaves more than half the floor live; with GOGC set
// (here to 100), start-up leaves it alone.
func TestPaceGC(t *testing.T) {
	if os.Getenv("FSD_TEST_PACE_GC") == "" {
		for _, env := range [][]string{{}, {"GOGC=100"}} {
			cmd := exec.Command(os.Args[0], "-test.run=^TestPaceGC$", "-test.count=1")
			cmd.Env = append(removeEnv(os.Environ(), "GOGC", "GOMEMLIMIT"), append(env, "FSD_TEST_PACE_GC=1")...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("with %q: %v\n%s", env, err, out)
			}
		}
		return
	}
	Start()
	if _, set := os.LookupEnv("GOGC"); set {
		if p := gogc(t); p != 100 {
			t.Fatalf("GOGC=100 in the environment, but the collector runs at %d", p)
		}
		return
	}
	if p := gogc(t); p <= 100 {
		t.Fatalf("a small heap is collected at GOGC=%d, want more than 100", p)
	}
	live := make([][]byte, 0, 24)
	for range 24 {
		live = append(live, make([]byte, 1<<20))
	}
	runtime.GC()
	// The pacer adjusts from a finalizer, which runs after the collection
	// on the finalizer goroutine.
	deadline := time.Now().Add(10 * time.Second)
	for gogc(t) != 100 {
		if time.Now().After(deadline) {
			t.Fatalf("24 MiB live after a collection, and the collector still runs at GOGC=%d, want 100", gogc(t))
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	runtime.KeepAlive(live)
}

func removeEnv(env []string, names ...string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, n := range names {
			if len(kv) > len(n) && kv[:len(n)+1] == n+"=" {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}
