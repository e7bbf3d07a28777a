package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/fsdrun/fsd/internal/egress"
)

// The backends, as Backend names them.
const (
	backendNative = "landlock+namespaces"
	backendBwrap  = "bwrap"
	// backendBridge is not a backend: it is the launcher bwrap starts
	// inside its sandbox to carry network: [hosts] to the proxy.
	backendBridge = "bridge"
)

// launcherName is the argv[0] that makes fsd's binary the launcher (see
// the init in launch_linux.go); specEnv carries the launcher's spec and is
// removed before the program starts.
const (
	launcherName = "fsd-sandbox"
	specEnv      = "FSD_SANDBOX_SPEC"
)

// forced, when set, is the backend Wrap uses instead of the probed one
// ("none": as if neither could be had). Only tests set it.
var forced string

// spec is what the launcher is told: the program to start and what it may
// do, resolved by the parent.
type spec struct {
	Backend  string   `json:"backend"`
	Probe    bool     `json:"probe,omitempty"` // set up, confine, start nothing
	Path     string   `json:"path"`
	Args     []string `json:"args"`
	Dir      string   `json:"dir"`
	Plan     plan     `json:"plan"`
	Net      NetMode  `json:"net"`
	Cgroup   string   `json:"cgroup,omitempty"` // the call's pids cgroup, when there is one
	CgroupV2 bool     `json:"cgroupV2,omitempty"`
	NProc    int      `json:"nproc,omitempty"` // RLIMIT_NPROC when there is no cgroup
	Files    int      `json:"files,omitempty"` // cmd.ExtraFiles, at fds 3…
	Bwrap    []string `json:"bwrap,omitempty"` // bwrap's argv, program included
	Proxy    string   `json:"proxy,omitempty"` // the egress proxy's socket, under NetHosts
}

var probed struct {
	once sync.Once
	name string
	err  error
}

// Backend is the sandbox Wrap uses on this machine: "landlock+namespaces"
// (native) or "bwrap", or an error wrapping ErrUnavailable that names why
// and both fixes. It is probed once per process by confining a launcher
// that starts nothing.
func Backend() (string, error) {
	probed.once.Do(func() { probed.name, probed.err = detect() })
	return probed.name, probed.err
}

func detect() (string, error) {
	nerr := probeNative()
	if nerr == nil {
		return backendNative, nil
	}
	bw, berr := exec.LookPath("bwrap")
	if berr == nil {
		if berr = probeBwrap(bw); berr == nil {
			return backendBwrap, nil
		}
		berr = fmt.Errorf("bwrap fails: %w", berr)
	} else {
		berr = errors.New("bwrap is not installed")
	}
	return "", unavailable(fmt.Sprintf("the native sandbox needs Landlock and unprivileged user namespaces (%v), and %v", nerr, berr))
}

func unavailable(why string) error {
	return fmt.Errorf("%w: %s; install bubblewrap or enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces>0), or set `sandbox: off` in the workflow to run its programs unconfined", ErrUnavailable, why)
}

func probeNative() error {
	if landlockABI() < 1 {
		return errors.New("Landlock is not enabled in this kernel")
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{launcherName}
	s := spec{Backend: backendNative, Probe: true, Dir: "/", Net: NetOff, Plan: makePlan(Policy{}, nil, "")}
	js, err := json.Marshal(s)
	if err != nil {
		return err
	}
	cmd.Env = []string{specEnv + "=" + string(js)}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	namespaces(cmd.SysProcAttr, NetOff)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func probeBwrap(bw string) error {
	out, err := exec.Command(bw, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// namespaces asks for the launcher's namespaces, the user's ids mapped to
// themselves so what the program writes stays the user's.
//
// X3: a network namespace of its own unless NetOn. X5: a PID namespace
// whose init is the launcher, which dies with fsd (Pdeathsig, kept from
// package proc) or its process group.
func namespaces(a *syscall.SysProcAttr, net NetMode) {
	a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC
	if net != NetOn {
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	uid, gid := os.Getuid(), os.Getgid()
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	a.GidMappingsEnableSetgroups = false
	// A user other than root loses its capabilities in the new namespace
	// when it execs the launcher; ambient ones survive the exec. The
	// launcher needs them to mount, bring up lo and drop them all.
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}
}

// Wrap turns cmd — prepared by package proc and not yet started — into
// the same program confined by p: fsd's own binary starts as a launcher
// in fresh namespaces (or bwrap does), which confines and starts the
// program, waits for it and exits with its status (128+n for a death by
// signal n). Call cleanup once cmd has been waited for. It fails (wrapping
// ErrUnavailable) rather than run the program unconfined.
//
// X7: no backend, no start: the error names both fixes and `sandbox: off`.
func Wrap(cmd *exec.Cmd, p Policy) (cleanup func(), err error) {
	if cmd.Process != nil {
		return nil, errors.New("sandbox: the program has already started")
	}
	backend := forced
	if backend == "" {
		if backend, err = Backend(); err != nil {
			return nil, err
		}
	}
	if backend != backendNative && backend != backendBwrap {
		return nil, unavailable("tests asked for no backend")
	}
	if p.Network == "" {
		p.Network = NetOff
	}
	if cmd.Err != nil {
		return func() {}, nil // Start reports it; nothing runs
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	dir := cmd.Dir
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	exe := cmd.Path
	if !filepath.IsAbs(exe) {
		exe = filepath.Join(dir, exe)
	}
	s := spec{Backend: backend, Path: exe, Args: cmd.Args, Dir: dir, Net: p.Network, Files: len(cmd.ExtraFiles)}
	s.Plan = makePlan(p, env, exe)
	s.Plan.Links = aliases(dir, p)
	if p.Network == NetOn {
		if r, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil {
			s.Plan.Read = appendReal(s.Plan.Read, r) // DNS, when it lives in the hidden /run
		}
	}
	maxProcs := p.MaxProcs
	if maxProcs <= 0 {
		maxProcs = DefaultMaxProcs
	}
	// The launcher's own share of the cgroup: its confining thread
	// (native), or bwrap's two processes.
	slack := 1
	switch {
	case backend == backendBwrap && p.Network == NetHosts:
		slack = 2 + bridgeThreads // and the bridge's launcher inside
	case backend == backendBwrap:
		slack = 2
	}
	var proxy *egress.Proxy
	if p.Network == NetHosts {
		allow, err := egress.ParseAllowlist(p.Hosts)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		if proxy, err = egress.Listen(egress.Config{Allow: allow, Dir: os.TempDir()}); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		s.Proxy = proxy.Path()
	}
	cg := newCgroup(maxProcs + slack)
	cleanup = func() {
		cg.remove()
		if proxy != nil {
			proxy.Close()
		}
	}
	if cg.dir != "" {
		s.Cgroup, s.CgroupV2 = cg.dir, cg.v2
	} else {
		s.NProc = maxProcs
	}
	if backend == backendBwrap {
		bw, err := exec.LookPath("bwrap")
		if err != nil {
			cleanup()
			return nil, unavailable("bwrap is not installed")
		}
		if s.Bwrap, err = bwrapArgs(bw, s); err != nil {
			cleanup()
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	js, err := json.Marshal(s)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	cmd.Path = "/proc/self/exe"
	cmd.Args = []string{launcherName}
	cmd.Env = append(append([]string(nil), env...), specEnv+"="+string(js))
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if backend == backendNative {
		namespaces(cmd.SysProcAttr, p.Network)
	}
	return cleanup, nil
}
