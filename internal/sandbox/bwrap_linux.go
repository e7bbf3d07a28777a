package sandbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// bwrapArgs is bwrap's argv for s: the same view as the native launcher's
// (system folders, granted paths, private /proc, /tmp, /dev/shm, secrets
// hidden), built from an empty root instead of restricted by Landlock.
//
// X1: only the writable paths are bound writable.
func bwrapArgs(bw string, s spec) ([]string, error) {
	a := []string{bw, "--unshare-all", "--die-with-parent", "--cap-drop", "ALL"}
	if s.Net == NetOn {
		a = append(a, "--share-net")
	}
	for _, d := range systemRead {
		if target, err := os.Readlink(d); err == nil {
			a = append(a, "--symlink", target, d) // merged /usr: /bin -> usr/bin
		}
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm")
	type bind struct {
		path string
		rw   bool
	}
	var binds []bind
	for _, p := range s.Plan.Read {
		binds = append(binds, bind{p, false})
	}
	for _, p := range s.Plan.Write {
		if !strings.HasPrefix(p, "/dev/") {
			binds = append(binds, bind{p, true})
		}
	}
	slices.SortStableFunc(binds, func(x, y bind) int { return len(x.path) - len(y.path) })
	for _, b := range binds {
		if b.rw {
			a = append(a, "--bind", b.path, b.path)
		} else {
			a = append(a, "--ro-bind", b.path, b.path)
		}
	}
	for _, m := range s.Plan.Mask {
		if fi, err := os.Stat(m); err == nil && fi.IsDir() {
			a = append(a, "--perms", "0000", "--tmpfs", m, "--remount-ro", m)
		} else if err == nil {
			a = append(a, "--ro-bind", "/dev/null", m)
		}
	}
	for _, l := range s.Plan.Links {
		// Inside a bound folder the link is the host's own, there already.
		if !slices.ContainsFunc(binds, func(b bind) bool { return within(l.Path, b.path) }) {
			a = append(a, "--symlink", l.Target, l.Path)
		}
	}
	a = append(a, "--chdir", s.Dir)
	if s.Proxy == "" {
		return append(append(append(a, "--"), s.Path), s.Args[1:]...), nil
	}
	// network: [hosts]: fsd's binary, bound in under the launcher's name,
	// runs the bridge to the proxy's socket (its folder bound in) and
	// starts the program.
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	inner, err := json.Marshal(spec{Backend: backendBridge, Proxy: s.Proxy, Path: s.Path, Args: s.Args, Dir: s.Dir})
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(s.Proxy)
	launcher := "/.fsd/" + launcherName
	a = append(a, "--bind", dir, dir, "--ro-bind", exe, launcher, "--setenv", specEnv, string(inner))
	return append(a, "--", launcher), nil
}

// bridgeThreads is the room a pids bound leaves for the threads of the
// bridge's launcher inside bwrap.
const bridgeThreads = 16
