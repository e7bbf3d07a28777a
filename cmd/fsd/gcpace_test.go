package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	fanoutwf "github.com/fsdrun/fsd/internal/fanout"
)

// TestCommandPacesCollector (I10): the fsd command's main paces the
// collector, so a cold 1,000-task run collects fewer times than the same
// run with GOGC=100 in its environment, which leaves Go's default pacing
// in place (GODEBUG=gctrace=1 prints a line for each collection).
func TestCommandPacesCollector(t *testing.T) {
	t.Parallel()
	wf, err := fanoutwf.Write(t.TempDir(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	collections := func(env ...string) int {
		t.Helper()
		cmd := exec.Command(os.Args[0], "run", wf, "--runs-dir", t.TempDir())
		cmd.Env = append(removeEnv(os.Environ(), "GOGC", "GOMEMLIMIT", "GODEBUG"), append(env, "FSD_TEST_AS_MAIN=1", "GODEBUG=gctrace=1")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("fsd run %s: %v\n%s", filepath.Base(wf), err, out)
		}
		n := 0
		for line := range strings.Lines(string(out)) {
			if strings.HasPrefix(line, "gc ") {
				n++
			}
		}
		return n
	}
	paced, dflt := collections(), collections("GOGC=100")
	if paced >= dflt {
		t.Errorf("fsd run of 1,000 tasks collected %d times, with GOGC=100 %d: the command does not pace the collector", paced, dflt)
	}
}

// removeEnv is env without the variables names.
func removeEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, n := range names {
			keep = keep && name != n
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
