package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// One session whose session.json is damaged (a crash, a full disk) does
// not hide the others from fsd sessions: it is named on stderr instead.
func TestSessionsListSkipsDamaged(t *testing.T) {
	t.Parallel()
	dir, wf := sessionProject(t)
	write(t, filepath.Join(dir, "box", "open"), "")
	fsd := func(args ...string) (int, string, string) {
		cmd, out, errb := fsdProc(args...)
		cmd.Dir = dir
		err := cmd.Run()
		return exitCode(err), out.String(), errb.String()
	}
	if code, _, errb := fsd("run", wf, "--session", "good", "first"); code != 0 {
		t.Fatalf("turn 1 = %d: %s", code, errb)
	}
	bad := filepath.Join(dir, ".fsd", "sessions", "bad")
	write(t, filepath.Join(bad, "session.lock"), "")
	write(t, filepath.Join(bad, "session.json"), "{bad")
	for _, args := range [][]string{{"sessions"}, {"sessions", "ls", "--format", "json"}} {
		code, out, errb := fsd(args...)
		if code != 0 || !strings.Contains(out, "good") || !strings.Contains(errb, "damaged") || !strings.Contains(errb, "bad") {
			t.Errorf("fsd %v = %d: stdout %q stderr %q; want good listed and bad named on stderr", args, code, out, errb)
		}
	}
}
