package gcpace

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"syscall"
)

// gcFloor is the heap below which the collector is not run (I10): half
// of internal/startup's huge-page reservation (32 MiB on Linux), whose
// pages the heap fills without a page fault each; the other half is room
// for goroutine stacks and the heap's fragmentation, which live in the
// same pages. With a floor of 24 or 32 MiB a 1,000-task run's heap grew
// past the reservation and took 500–700 more page faults than with 16.
// A short run (a thousand tasks allocate about 15 MiB and keep 2–5 MiB)
// collects once or not at all; a long one is collected as with GOGC=100
// once its live heap passes half the floor.
const gcFloor = 16 << 20

// liveHeap is the runtime metric Start's pacer reads after each collection.
const liveHeap = "/gc/heap/live:bytes"

// gcPacer keeps the collector's goal at max(2 × live heap, gcFloor).
type gcPacer struct {
	sample  [1]metrics.Sample
	percent int // the GOGC last set
}

// Start (I10) raises GOGC while the live heap is small, so a process
// does not collect a few megabytes over and over while it starts and
// runs a short workflow: with the default GOGC=100 and its 4 MiB minimum
// goal, a cold 1,000-task run collected five or six times, each
// collection costing a few milliseconds of CPU on two cores and touching
// memory the run had not touched before. The goal is
// max(2 × live, gcFloor): the heap grows to the floor before the first
// collection and then as GOGC=100 would have it once the live heap is
// half the floor. A GOGC or GOMEMLIMIT setting in the environment turns
// this off, so the knobs work as for any Go program.
func Start() {
	if _, set := syscall.Getenv("GOGC"); set {
		return
	}
	if _, set := syscall.Getenv("GOMEMLIMIT"); set {
		return
	}
	p := &gcPacer{}
	p.sample[0].Name = liveHeap
	p.adjust()
	p.arm()
}

// sentinel is the object whose finalizer runs after each collection. It
// holds a pointer so the allocator does not pack it into a shared tiny
// block, whose finalizers may never run.
type sentinel struct{ _ *byte }

// arm sets a finalizer on a fresh object that nothing references: the
// runtime runs it after the next collection, and it arms the next one.
func (p *gcPacer) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		p.adjust()
		p.arm()
	})
}

// adjust sets GOGC for the live heap the last collection left.
func (p *gcPacer) adjust() {
	metrics.Read(p.sample[:])
	if p.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	if pc := gcPercent(p.sample[0].Value.Uint64(), gcFloor); pc != p.percent {
		debug.SetGCPercent(pc)
		p.percent = pc
	}
}

// gcPercent is the GOGC that puts the collector's goal, live × (1 +
// GOGC/100), at max(2 × live, floor). It is at most floor / 4 MiB × 100:
// the runtime's smallest goal, 4 MiB at GOGC=100, grows with GOGC, and
// above that a small heap's goal would pass the floor.
func gcPercent(live, floor uint64) int {
	ceiling := float64(floor) / (4 << 20) * 100
	if live == 0 {
		return int(ceiling)
	}
	if 2*live >= floor {
		return 100
	}
	p := math.Ceil((float64(floor)/float64(live) - 1) * 100)
	return int(min(p, ceiling))
}
