package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// covered are the folders the launcher replaces with an empty tmpfs: /tmp
// (the call's private tmp), /dev/shm (private shared memory), /run (the
// machine's sockets: Landlock below ABI 9 does not stop a connect to a
// Unix socket by path). Granted paths inside them are bound back.
var covered = []string{"/tmp", "/dev/shm", "/run"}

// setupMounts makes the launcher's mount namespace the call's view: mounts
// private, the covered folders empty (granted paths inside them bound
// back, read-only unless writable), secrets inside granted paths hidden,
// and a /proc of the call's own PID namespace (fsd's environment, API keys
// included, is not in it).
//
// X1: only the granted paths under /tmp come back, read-only unless
// writable. X2: secrets inside granted paths are hidden. X6: /proc is the
// call's own.
func setupMounts(s spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("private mounts: %w", err)
	}
	type back struct {
		path string
		fd   int
		dir  bool
		ro   bool
	}
	var backs []back
	add := func(p string, ro bool) error {
		for _, b := range backs {
			if b.path == p {
				return nil
			}
		}
		for _, c := range covered {
			if !within(p, c) {
				continue
			}
			fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("open %s: %w", p, err)
			}
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return fmt.Errorf("stat %s: %w", p, err)
			}
			backs = append(backs, back{p, fd, st.Mode&unix.S_IFMT == unix.S_IFDIR, ro})
			return nil
		}
		return nil
	}
	for _, p := range s.Plan.Write {
		if err := add(p, false); err != nil {
			return err
		}
	}
	for _, p := range s.Plan.Read {
		if err := add(p, true); err != nil {
			return err
		}
	}
	if err := add(target(s.Plan.Links, s.Dir), true); err != nil {
		return err
	}
	for _, c := range covered {
		if fi, err := os.Lstat(c); err != nil || !fi.IsDir() {
			continue // absent, or a link into another covered folder
		}
		if err := unix.Mount("tmpfs", c, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			return fmt.Errorf("private %s: %w", c, err)
		}
	}
	slices.SortFunc(backs, func(a, b back) int { return len(a.path) - len(b.path) })
	for _, b := range backs {
		if err := mountpoint(b.path, b.dir); err != nil {
			return err
		}
		if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(b.fd), b.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", b.path, err)
		}
		unix.Close(b.fd)
		if b.ro {
			if err := remountRO(b.path); err != nil {
				return err
			}
		}
	}
	// A hidden file is an empty file nobody may open, in the private /tmp
	// (not /dev/null: a read-only mount does not stop writes to a device).
	hidden := ""
	for _, m := range s.Plan.Mask {
		fi, err := os.Stat(m)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			err = unix.Mount("tmpfs", m, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=000,size=4k")
		} else {
			if hidden == "" {
				if hidden, err = hiddenFile(); err != nil {
					return fmt.Errorf("hide %s: %w", m, err)
				}
			}
			if err = unix.Mount(hidden, m, "", unix.MS_BIND, ""); err == nil {
				err = remountRO(m)
			}
		}
		if err != nil {
			return fmt.Errorf("hide %s: %w", m, err)
		}
	}
	for _, l := range s.Plan.Links {
		// Where the link is hidden (a covered folder): made again in the
		// private one. Elsewhere it is the host's own, there already.
		if _, err := os.Lstat(l.Path); errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(filepath.Dir(l.Path), 0o755); err != nil {
				return fmt.Errorf("link %s: %w", l.Path, err)
			}
			if err := os.Symlink(l.Target, l.Path); err != nil {
				return fmt.Errorf("link %s: %w", l.Path, err)
			}
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("private /proc: %w", err)
	}
	return nil
}

// hiddenFile makes the empty, unopenable file hidden files are covered
// with, in the private /tmp (or, where there is none, /dev/null).
func hiddenFile() (string, error) {
	if fi, err := os.Lstat("/tmp"); err != nil || !fi.IsDir() {
		return "/dev/null", nil
	}
	const path = "/tmp/.fsd-hidden"
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	return path, f.Close()
}

// mountpoint makes path exist (in a covered folder's tmpfs) as a folder
// or an empty file.
func mountpoint(path string, dir bool) error {
	if dir {
		return os.MkdirAll(path, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// remountRO makes a bind mount read-only, keeping the flags the kernel
// locks on a mount a user namespace inherited.
func remountRO(path string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fmt.Errorf("read-only %s: %w", path, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for _, f := range [][2]uintptr{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f[0] != 0 {
			flags |= f[1]
		}
	}
	if err := unix.Mount("", path, "", flags, ""); err != nil {
		return fmt.Errorf("read-only %s: %w", path, err)
	}
	return nil
}

// Landlock access rights.
const (
	accessRead = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// accessFile are the rights a rule on a file (not a folder) may hold.
	accessFile = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// handledFS are the filesystem rights Landlock ABI abi knows: all of them
// are denied unless a rule grants them.
func handledFS(abi int) uint64 {
	switch {
	case abi >= 9:
		return 1<<17 - 1
	case abi >= 5:
		return 1<<16 - 1
	case abi >= 3:
		return 1<<15 - 1
	case abi == 2:
		return 1<<14 - 1
	default:
		return 1<<13 - 1
	}
}

// confine confines the calling thread — and what it starts — to pl:
// Landlock rules (reads of pl.Read, /proc and the covered folders' binds;
// writes of pl.Write, /tmp and /dev/shm), no abstract Unix sockets or
// signals outside the call (ABI 6), no_new_privs, and no capabilities.
// The caller holds the thread locked.
//
// X1, X2: Landlock grants reads of pl.Read and writes of pl.Write only.
func confine(pl plan) error {
	abi := landlockABI()
	if abi < 1 {
		return fmt.Errorf("landlock: not enabled in this kernel")
	}
	all := handledFS(abi)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: all}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	rs, err := landlockCreate(&attr)
	if err != nil {
		return fmt.Errorf("landlock ruleset: %w", err)
	}
	defer unix.Close(rs)
	rule := func(path string, access uint64) error {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return fmt.Errorf("landlock rule %s: %w", path, err)
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("landlock rule %s: %w", path, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			access &= accessFile
		}
		if err := landlockAddPath(rs, fd, access&all); err != nil {
			return fmt.Errorf("landlock rule %s: %w", path, err)
		}
		return nil
	}
	for _, p := range append(slices.Clone(pl.Read), "/proc") {
		if err := rule(p, accessRead); err != nil {
			return err
		}
	}
	for _, p := range append(slices.Clone(pl.Write), "/tmp", "/dev/shm") {
		if err := rule(p, all); err != nil {
			return err
		}
	}
	last := lastCap()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := landlockRestrictSelf(rs); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return dropCaps(last)
}

func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if n, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
		return n
	}
	return 63
}

// dropCaps empties the thread's capabilities and bounding set: the
// program, even as root of its user namespace, holds none.
func dropCaps(last int) error {
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	return nil
}
