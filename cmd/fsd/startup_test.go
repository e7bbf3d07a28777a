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

// maxDepInitBytes and maxDepInitAllocs are what a package fsd depends on
// may allocate in its initialisation, and how many times: room for small
// tables and a few patterns.
const maxDepInitBytes, maxDepInitAllocs = 48 << 10, 1000

// heavyInits (I8) are the dependencies allowed more, each to twice what it
// allocated when it was listed, so an update that adds work is seen.
var heavyInits = map[string]struct {
	bytes int
	why   string
}{
	"github.com/santhosh-tekuri/jsonschema/v6":   {2 * 1701288, "compiles the meta-schemas of the five drafts it supports; fsd validates manifests, output and tool input with it"},
	"github.com/yuin/goldmark/util":              {2 * 139464, "its Unicode case-folding table; artifacts are parsed with goldmark"},
	"github.com/yuin/goldmark/parser":            {2 * 110336, "its HTML block patterns"},
	"github.com/yuin/goldmark/extension":         {2 * 264240, "every extension's patterns, linkify's URLs above all; artifacts' tables, strikethrough and task lists are its"},
	"github.com/google/jsonschema-go/jsonschema": {2 * 81240, "the MCP SDK's schemas"},
}

// TestDependenciesDoLittleAtStart (I8): every fsd process runs the
// initialisation of every package the binary links, so a dependency
// whose initialisation does real work (compiles patterns, builds tables)
// is linked only when it is one of heavyInits. It reads fsd version's
// GODEBUG=inittrace=1, as TestPackagesDoNoWorkAtStart does for fsd's own,
// and leaves out the packages only the test binary links.
func TestDependenciesDoLittleAtStart(t *testing.T) {
	linked := map[string]bool{}
	for _, pkg := range linkedPackages(t) {
		// inittrace writes a path's dots after its last slash as %2e.
		i := strings.LastIndexByte(pkg, '/') + 1
		linked[pkg[:i]+strings.ReplaceAll(pkg[i:], ".", "%2e")] = true
	}
	seen := map[string]bool{}
	for _, p := range initTrace(t) {
		if strings.HasPrefix(p.path, "github.com/fsdrun/fsd/") || !linked[p.path] {
			continue
		}
		seen[p.path] = true
		if h, ok := heavyInits[p.path]; ok {
			if p.bytes > h.bytes {
				t.Errorf("%s allocates %d bytes at start, more than twice what it did when it was allowed to (%s)", p.path, p.bytes, h.why)
			}
			continue
		}
		if p.bytes > maxDepInitBytes || p.allocs > maxDepInitAllocs {
			t.Errorf("%s allocates %d bytes in %d allocations at start, more than %d or %d: find what imports it (go list -deps) and whether fsd can do without it, or list it in heavyInits with the reason", p.path, p.bytes, p.allocs, maxDepInitBytes, maxDepInitAllocs)
		}
	}
	if !seen["github.com/nats-io/nats%2ego"] || len(seen) < 50 {
		t.Fatalf("inittrace named %d of the binary's packages, not nats.go among them: its format may have changed", len(seen))
	}
	for path := range heavyInits {
		if !seen[path] {
			t.Errorf("heavyInits lists %s, which fsd no longer initialises: drop it", path)
		}
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
