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
		dir := filepath.Join(parent, fmt.Sprintf("fsd-%d-%s", os.Getpid(), hex.EncodeToString(b[:])))
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
// in parent: those whose creator's pid is gone. The kernel kills their
// tasks with the launcher, but under load they may not have left yet: a
// single rmdir would fail and leave the folder for good.
func removeStale(parent string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, _, ok := strings.Cut(strings.TrimPrefix(e.Name(), "fsd-"), "-")
		n, err := strconv.Atoi(pid)
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "fsd-") || !ok || err != nil || n <= 0 {
			continue
		}
		if errors.Is(syscall.Kill(n, 0), syscall.ESRCH) {
			cgroup{dir: filepath.Join(parent, e.Name())}.remove()
		}
	}
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
