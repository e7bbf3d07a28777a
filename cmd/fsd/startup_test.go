package main

import (
	"io"
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
	seen := 0
	for _, p := range initTrace(t) {
		if !strings.HasPrefix(p.path, "github.com/fsdrun/fsd/") || p.path == "github.com/fsdrun/fsd/cmd/fsd" {
			continue
		}
		seen++
		limit := maxInitBytes
		if p.path == "github.com/fsdrun/fsd/internal/startup" {
			// Its heap reservation (I3): 32 MiB mapped, never written,
			// and collected before the next package starts.
			limit += 32 << 20
		}
		if p.bytes > limit {
			t.Errorf("%s allocates %d bytes (%d allocations) at start, more than %d: build it at first use (internal/lazyre for a regexp, sync.OnceValue otherwise)", p.path, p.bytes, p.allocs, limit)
		}
	}
	if seen < 10 {
		t.Fatalf("inittrace named %d fsd packages; its format may have changed", seen)
	}
}

// TestStartupInitialisesFirst (I1, I3): internal/startup maps the heap
// with huge pages and reserves the main goroutine's stack before any
// package whose initialisation allocates more than 64 KiB (the JSON
// Schema library's, which recurses deepest, among them), or those
// packages fill small pages and grow the stack step by step as if it
// were not there.
func TestStartupInitialisesFirst(t *testing.T) {
	const startup, deep = "github.com/fsdrun/fsd/internal/startup", "github.com/santhosh-tekuri/jsonschema/v6"
	for _, p := range initTrace(t) {
		if p.path == startup {
			return
		}
		if p.bytes > 64<<10 || p.path == deep {
			t.Errorf("%s (%d bytes) is initialised before %s", p.path, p.bytes, startup)
		}
	}
	t.Fatalf("inittrace does not name %s: cmd/fsd no longer imports it", startup)
}

// initLog is one package's initialisation, from GODEBUG=inittrace=1.
type initLog struct {
	path          string
	bytes, allocs int
}

// initTrace runs the test binary as fsd version under
// GODEBUG=inittrace=1 and returns the packages' initialisations in the
// order they ran.
func initTrace(t *testing.T) []initLog {
	t.Helper()
	cmd := exec.Command(os.Args[0], "version")
	cmd.Env = append(os.Environ(), "FSD_TEST_AS_MAIN=1", "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fsd version: %v\n%s", err, out)
	}
	var inits []initLog
	for line := range strings.Lines(string(out)) {
		m := initLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		a, _ := strconv.Atoi(m[3])
		inits = append(inits, initLog{m[1], n, a})
	}
	if len(inits) < 50 {
		t.Fatalf("inittrace named %d packages; its format may have changed:\n%s", len(inits), out)
	}
	return inits
}

// TestCommandMakesOnlyItself: a command's root holds that command alone,
// so starting it defines no other command's flags; each name in commands
// is the name of the command it makes, and a first word that names none
// gets every command (for help, completion and suggestions).
func TestCommandMakesOnlyItself(t *testing.T) {
	all := newRootCmd(io.Discard, io.Discard).Commands()
	if len(all) != len(commands) {
		t.Fatalf("the whole tree has %d commands, the table %d", len(all), len(commands))
	}
	for _, c := range commands {
		root := newRootCmdFor([]string{c.name, "--help"}, io.Discard, io.Discard)
		subs := root.Commands()
		if len(subs) != 1 || subs[0].Name() != c.name {
			var names []string
			for _, s := range subs {
				names = append(names, s.Name())
			}
			t.Errorf("fsd %s makes %v, want only %s", c.name, names, c.name)
		}
	}
	for _, args := range [][]string{nil, {"help", "run"}, {"-v", "run"}, {"rnu"}} {
		if got := len(newRootCmdFor(args, io.Discard, io.Discard).Commands()); got != len(commands) {
			t.Errorf("fsd %v makes %d commands, want all %d", args, got, len(commands))
		}
	}
}
