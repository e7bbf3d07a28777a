//go:build unix

package proctest

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// looks bounds how often Gone and ReadPid look, every pause: ten seconds
// in all, far beyond what a kill or a write takes on a busy machine.
const (
	looks = 1000
	pause = 10 * time.Millisecond
)

// Running reports whether pid is a process that still runs: it exists and,
// where /proc tells, is not a zombie. A test's processes are its own, so
// signal 0 answers for them.
func Running(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: signal 0 is all there is
	}
	// The state follows the command name, which is in parentheses and may
	// hold spaces.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(f) == 0 || f[0] != "Z"
}

// Gone waits until pid no longer runs and reports true, or false if it
// still runs after the bound.
func Gone(pid int) bool {
	for range looks {
		if !Running(pid) {
			return true
		}
		time.Sleep(pause)
	}
	return false
}

// ReadPid waits until path holds a pid (a program writes it with
// `echo $$ > path`) and returns it; it fails the test past the bound.
func ReadPid(t testing.TB, path string) int {
	t.Helper()
	for range looks {
		b, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
			return pid
		}
		time.Sleep(pause)
	}
	t.Fatalf("%s never held a pid", path)
	return 0
}
