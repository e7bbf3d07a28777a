package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
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
		dir := filepath.Join(parent, "fsd-"+hex.EncodeToString(b[:]))
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

// remove deletes the cgroup once its last task is gone: the launcher's
// PID namespace is torn down when it exits, and the kernel releases its
// tasks from the cgroup a moment later.
func (c cgroup) remove() {
	if c.dir == "" {
		return
	}
	for range 200 {
		err := syscall.Rmdir(c.dir)
		if err == nil || !errors.Is(err, syscall.EBUSY) {
			return
		}
		time.Sleep(5 * time.Millisecond)
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
