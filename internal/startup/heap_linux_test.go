package startup

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestHugeHeap (I3): the start's heap is mapped and marked for huge
// pages — the mapping that holds the first object start-up allocated,
// and with the mappings after it at least heapReserve bytes that can be
// written — as the process's own memory map says (VmFlags "hg" is
// MADV_HUGEPAGE).
func TestHugeHeap(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("this kernel has no transparent huge pages, so MADV_HUGEPAGE marks nothing")
	}
	if thpDisabled(func(k string) (string, bool) { return os.LookupEnv(k) }) {
		t.Skip("GODEBUG=disablethp=1 turns the huge heap off")
	}
	if heapStart == nil {
		t.Fatal("start-up allocated no first object: hugeHeap did not run")
	}
	at := uint64(uintptr(unsafe.Pointer(heapStart)))
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no memory map to read: %v", err)
	}
	defer f.Close()
	var lo, hi uint64
	var rw, marked, holds bool
	var huge uint64 // bytes marked from the first object's mapping on
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if r, rest, ok := strings.Cut(line, " "); ok && strings.Count(r, "-") == 1 && !strings.HasSuffix(r, ":") {
			rw = strings.HasPrefix(rest, "rw")
			a, b, _ := strings.Cut(r, "-")
			lo, _ = strconv.ParseUint(a, 16, 64)
			hi, _ = strconv.ParseUint(b, 16, 64)
			continue
		}
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok {
			hg := strings.Contains(" "+flags+" ", " hg ")
			if lo <= at && at < hi {
				holds, marked = true, hg
			}
			if hg && rw && hi > at {
				huge += hi - max(lo, at)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !holds {
		t.Fatalf("no mapping holds the first object at %#x", at)
	}
	if !marked {
		t.Errorf("the mapping that holds the start's first object is not marked MADV_HUGEPAGE")
	}
	if huge < heapReserve {
		t.Errorf("%d bytes from the first object on are marked MADV_HUGEPAGE, want at least %d", huge, heapReserve)
	}
}

func TestThpDisabled(t *testing.T) {
	for v, want := range map[string]bool{
		"":                             false,
		"disablethp=1":                 true,
		"gctrace=1,disablethp=1":       true,
		"disablethp=1,gctrace=1":       true,
		"disablethp=1,disablethp=0":    false,
		"disablethp=0":                 false,
		"xdisablethp=1,disablethp=10":  false,
		"madvdontneed=1,,disablethp=1": true,
	} {
		getenv := func(string) (string, bool) { return v, v != "" }
		if got := thpDisabled(getenv); got != want {
			t.Errorf("GODEBUG=%q: disabled %v, want %v", v, got, want)
		}
	}
}
