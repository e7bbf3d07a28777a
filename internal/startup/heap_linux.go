package startup

import (
	"runtime"
	"strings"
	"syscall"
	"unsafe"
)

// heapReserve is how much heap the process maps at start and asks the
// kernel to back with huge pages: the start's 4 MiB and what a cold run
// of a thousand tasks touches (about 21 MiB) fit. It bounds the memory
// partly used huge pages can add; the heap grows past it on 4 KiB pages.
// 16 MiB left a 1,000-task run a thousand more faults, 64 MiB added
// 12 MiB to a 10,000-task run's peak RSS.
const heapReserve = 32 << 20

// madvHugepage is MADV_HUGEPAGE, the same on every Linux architecture.
const madvHugepage = 14

// heapStart is the first object start-up allocates: the heap's next
// pages begin at or near it. A package variable keeps it on the heap.
var heapStart *[16]byte

// heapReserved holds the reservation until the collector frees it.
var heapReserved []byte

// hugeHeap (I3) maps the next heapReserve bytes of heap and marks them
// MADV_HUGEPAGE, so the kernel backs them with 2 MiB pages as they are
// first touched instead of one 4 KiB page per fault. Where the kernel
// leaves huge pages to madvise (the usual setting), the Go runtime does
// not ask for them, and a short process spends much of its CPU in page
// faults as it fills its first megabytes: the packages' initialisation
// alone touches about 4 MiB. The runtime maps heap as it grows, so the
// reservation is one large allocation (mapped, never written), marked,
// then dropped and collected: the heap's later objects fill its pages
// from the lowest address, as the page allocator hands them out.
// GODEBUG=disablethp=1 in the environment (the runtime's name for the
// setting; a godebug line in a go.mod or a //go:debug directive does not
// reach this check) turns it off.
func hugeHeap() {
	if thpDisabled(syscall.Getenv) {
		return
	}
	heapStart = new([16]byte)
	heapReserved = make([]byte, heapReserve)
	start := uintptr(unsafe.Pointer(heapStart))
	res := uintptr(unsafe.Pointer(unsafe.SliceData(heapReserved)))
	lo, hi := min(start, res), max(start+16, res+heapReserve)
	page := uintptr(syscall.Getpagesize())
	lo &^= page - 1
	// Between the first object and the reservation lies only heap; a
	// gap wider than the reservation means the heap is not laid out as
	// expected, and nothing is marked.
	if hi-lo <= 2*heapReserve {
		// Errors are ignored: a kernel without huge pages says EINVAL,
		// and the advice is only advice.
		_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, madvHugepage)
	}
	heapReserved = nil
	runtime.GC()
}

// thpDisabled reports whether GODEBUG sets disablethp=1 (the last
// setting of a name wins, as in the runtime).
func thpDisabled(getenv func(string) (string, bool)) bool {
	v, _ := getenv("GODEBUG")
	off := false
	for kv := range strings.SplitSeq(v, ",") {
		switch kv {
		case "disablethp=1":
			off = true
		case "disablethp=0":
			off = false
		}
	}
	return off
}
