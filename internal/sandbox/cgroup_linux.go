package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cgroup is one call's pids cgroup: pids.max bounds the processes (and
// threads) of the call, whatever user runs them. RLIMIT_NPROC, the
// fallback, does not bind root.
type cgroup struct {
	dir string
	v2  bool
}

// cgroupParents are where fsd may create a call's pids cgroup: the pids
// hierarchy of cgroup v1, or the root of a cgroup v2 hierarchy whose
// children get the pids controller. Both need the rights of root (or a
// delegation of them).
func cgroupParents() []string {
	var ps []string
	if unix.Access("/sys/fs/cgroup/pids", unix.W_OK) == nil {
		ps = append(ps, "/sys/fs/cgroup/pids")
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control"); err == nil && strings.Contains(" "+string(b), " pids") && unix.Access("/sys/fs/cgroup", unix.W_OK) == nil {
		ps = append(ps, "/sys/fs/cgroup")
	}
	return ps
}

// newCgroup creates a pids cgroup bounded to max tasks, or returns the
// zero cgroup when none can be had.
//
// X4: pids.max bounds every task of the call.
func newCgroup(max int) cgroup {
	var b [8]byte
	_, _ = rand.Read(b[:])
	for _, parent := range cgroupParents() {
		removeStale(parent)
		dir := filepath.Join(parent, fmt.Sprintf("fsd-%d-%d-%s", os.Getpid(), startTime(os.Getpid()), hex.EncodeToString(b[:])))
		if os.Mkdir(dir, 0o755) != nil {
			continue
		}
		if os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0) != nil {
			_ = syscall.Rmdir(dir)
			continue
		}
		var st unix.Statfs_t
		v2 := unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
		return cgroup{dir: dir, v2: v2}
	}
	return cgroup{}
}

// removeStale removes the cgroups an fsd that died (kill -9) left behind
// in parent: those whose creator is gone. A cgroup's name holds its
// creator's pid and the start time of that process, since a pid alone is
// reused (pid_max is often 32768, and a busy machine goes round it in
// minutes): a live process with the pid but another start time is not
// the creator. The kernel kills the tasks with the launcher, but under
// load they may not have left yet: a single rmdir would fail and leave
// the folder for good.
func removeStale(parent string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		parts := strings.SplitN(strings.TrimPrefix(e.Name(), "fsd-"), "-", 3)
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "fsd-") || len(parts) != 3 {
			continue
		}
		pid, err1 := strconv.Atoi(parts[0])
		started, err2 := strconv.ParseUint(parts[1], 10, 64)
		if err1 != nil || err2 != nil || pid <= 0 {
			continue
		}
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) || startTime(pid) != started {
			cgroup{dir: filepath.Join(parent, e.Name())}.remove()
		}
	}
}

// startTime is when process pid started, in clock ticks since boot
// (field 22 of /proc/PID/stat), or 0 when it cannot be read: with the pid
// it names one process for as long as the machine runs.
func startTime(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// or parentheses itself: count fields after its last ")".
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state), so field 22 is fields[19].
	if len(fields) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(fields[19], 10, 64)
	return n
}

// remove deletes the cgroup once its last task is gone, killing any task
// still in it: the call has ended (or its fsd died), so none of them may
// go on working. Tasks killed or already dying — the launcher's PID
// namespace is torn down when it exits — leave the cgroup a moment later;
// rmdir fails with EBUSY until they have, so it is retried, bounded.
func (c cgroup) remove() {
	if c.dir == "" {
		return
	}
	for range 400 {
		c.killTasks()
		err := syscall.Rmdir(c.dir)
		if err == nil || !errors.Is(err, syscall.EBUSY) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killTasks sends SIGKILL to every task the cgroup lists.
func (c cgroup) killTasks() {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// procBound names what bounds a call's processes on this machine, for
// Describe.
func procBound() string {
	if len(cgroupParents()) > 0 {
		return "pids cgroup"
	}
	if os.Getuid() == 0 {
		return "not enforced: root without a writable pids cgroup"
	}
	return "RLIMIT_NPROC"
}
