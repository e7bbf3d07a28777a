//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	fanoutwf "github.com/fsdrun/fsd/internal/fanout"
)

// builtFSD returns the fsd binary the startup benchmark and tests run:
// FSD_BIN when set (to compare two builds), else one built once per test
// process from this package, as README's go build makes it.
func builtFSD(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv("FSD_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			tb.Fatal(err)
		}
		return abs
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "fsd-startup-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "fsd")
		out, err := exec.Command("go", "build", "-o", built.path, ".").CombinedOutput()
		if err != nil {
			built.err = &buildError{err, out}
		}
	})
	if built.err != nil {
		tb.Fatalf("go build: %v", built.err)
	}
	return built.path
}

// built is the binary builtFSD made, once per test process.
var built struct {
	once sync.Once
	path string
	err  error
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

// processCost is what one fsd process cost, from the kernel's account of
// it: CPU (user + system) and minor page faults, which other processes on
// a shared machine barely move, unlike the wall time.
type processCost struct {
	cpu    time.Duration
	faults int64
}

// runFSD runs bin with args in dir and returns its cost; a non-zero exit
// fails tb with the process's output.
func runFSD(tb testing.TB, bin, dir string, env []string, args ...string) (processCost, []byte) {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("fsd %v: %v\n%s", args, err, out)
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if ru == nil {
		return processCost{}, out
	}
	return processCost{
		cpu:    time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		faults: int64(ru.Minflt),
	}, out
}

// BenchmarkStartup is the fixed cost of a cold fsd process, the built
// binary run once per iteration: fsd version (the runtime's start and
// every package's initialisation), fsd validate of a one-task workflow
// (its schemas compiled and checked) and fsd run of it with its record.
// Besides the wall time it reports CPU ms and page faults per process,
// which a busy machine barely moves. FSD_BIN=path measures another build.
//
//	go test ./cmd/fsd -run '^$' -bench Startup -benchtime 20x
func BenchmarkStartup(b *testing.B) {
	bin := builtFSD(b)
	dir := b.TempDir()
	wf, err := fanoutwf.Write(dir, 1)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args func(i int) []string
	}{
		{"version", func(int) []string { return []string{"version"} }},
		{"validate", func(int) []string { return []string{"validate", dir} }},
		{"run", func(i int) []string {
			return []string{"run", wf, "--runs-dir", filepath.Join(dir, "runs", strconv.Itoa(i))}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var total processCost
			i := 0
			for b.Loop() {
				cost, _ := runFSD(b, bin, dir, nil, c.args(i)...)
				total.cpu += cost.cpu
				total.faults += cost.faults
				i++
			}
			b.ReportMetric(float64(total.cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(total.faults)/float64(b.N), "faults/op")
		})
	}
}

// BenchmarkStartupInits is what the packages' initialisation allocates
// in a cold fsd version, from GODEBUG=inittrace=1: the packages
// initialised and their bytes and allocations, internal/startup's heap
// reservation (I3) aside, which is mapped and never written. These do
// not move with the machine's load, unlike the CPU the initialisation
// takes; TestDependenciesDoLittleAtStart holds each package to its share.
//
//	go test ./cmd/fsd -run '^$' -bench StartupInits -benchtime 3x
func BenchmarkStartupInits(b *testing.B) {
	bin := builtFSD(b)
	dir := b.TempDir()
	var pkgs, bytes, allocs int
	for b.Loop() {
		_, out := runFSD(b, bin, dir, []string{"GODEBUG=inittrace=1"}, "version")
		pkgs, bytes, allocs = 0, 0, 0
		for line := range strings.Lines(string(out)) {
			m := initLine.FindStringSubmatch(strings.TrimSpace(line))
			if m == nil || m[1] == "github.com/fsdrun/fsd/internal/startup" {
				continue
			}
			n, _ := strconv.Atoi(m[2])
			a, _ := strconv.Atoi(m[3])
			pkgs, bytes, allocs = pkgs+1, bytes+n, allocs+a
		}
	}
	if pkgs < 50 {
		b.Fatalf("inittrace named %d packages; its format may have changed", pkgs)
	}
	b.ReportMetric(float64(pkgs), "packages")
	b.ReportMetric(float64(bytes)/1024, "init-KiB")
	b.ReportMetric(float64(allocs), "init-allocs")
}
