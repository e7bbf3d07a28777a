package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// initLine is one package's line of GODEBUG=inittrace=1.
var initLine = regexp.MustCompile(`^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs`)

// maxInitBytes is what one fsd package may allocate in its initialisation:
// room for a few small tables, not a regexp set, a template or a schema.
const maxInitBytes = 8 << 10

// TestPackagesDoNoWorkAtStart (Z2): every fsd command runs every linked
// package's initialisation before it reads a flag, so fsd's own packages
// build their regexps, templates and checks when first used. This runs
// the test binary as fsd version under GODEBUG=inittrace=1 and holds each
// fsd package (the test binary's own main package aside: its test files
// are not in fsd) to maxInitBytes. Allocation counts, unlike times, are
// the same on a busy machine.
func TestPackagesDoNoWorkAtStart(t *testing.T) {
	cmd := exec.Command(os.Args[0], "version")
	cmd.Env = append(os.Environ(), "FSD_TEST_AS_MAIN=1", "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fsd version: %v\n%s", err, out)
	}
	seen := 0
	for line := range strings.Lines(string(out)) {
		m := initLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil || !strings.HasPrefix(m[1], "github.com/fsdrun/fsd/") || m[1] == "github.com/fsdrun/fsd/cmd/fsd" {
			continue
		}
		seen++
		if n, _ := strconv.Atoi(m[2]); n > maxInitBytes {
			t.Errorf("%s allocates %d bytes (%s allocations) at start, more than %d: build it at first use (internal/lazyre for a regexp, sync.OnceValue otherwise)", m[1], n, m[3], maxInitBytes)
		}
	}
	if seen < 10 {
		t.Fatalf("inittrace named %d fsd packages; its format may have changed:\n%s", seen, out)
	}
}
