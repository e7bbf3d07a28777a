package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/fsdrun/fsd/internal/egress"
)

// Exit statuses of the launcher when the program did not run.
const (
	exitSetup    = 125 // the sandbox could not be set up: nothing ran
	exitNoExec   = 126 // the program could not be started (denied, not executable)
	exitNotFound = 127 // the program does not exist inside the sandbox
)

// The launcher hooks in at init, not in main, because every binary that
// starts programs for skills — fsd and every test binary — imports this
// package (through internal/proc), and a re-executed binary must become
// the launcher before its own main or test flags run. It never returns.
func init() {
	// Under bwrap the launcher is started by path (bwrap cannot set
	// argv[0]); its name is still launcherName.
	if len(os.Args) == 0 || filepath.Base(os.Args[0]) != launcherName {
		return
	}
	// Landlock, no_new_privs, the capability drop and the cgroup join are
	// made on this thread and inherited by the program forked from it;
	// the runtime's other threads are not confined, and need not be.
	runtime.LockOSThread()
	var s spec
	if err := json.Unmarshal([]byte(os.Getenv(specEnv)), &s); err != nil {
		fmt.Fprintf(os.Stderr, "fsd sandbox: bad launcher spec: %v\n", err)
		os.Exit(exitSetup)
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, specEnv+"=") {
			env = append(env, kv)
		}
	}
	var code int
	var err error
	switch s.Backend {
	case backendBwrap:
		err = execBwrap(s, env)
	case backendBridge:
		code, err = bridged(s, env)
	default:
		code, err = launch(s, env)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fsd sandbox: %v\n", err)
		var se startError
		if errors.As(err, &se) {
			os.Exit(se.code)
		}
		os.Exit(exitSetup)
	}
	os.Exit(code)
}

// startError is a program that could not be started inside the sandbox.
type startError struct {
	code int
	err  error
}

func (e startError) Error() string { return e.err.Error() }

// launch runs as PID 1 of the call's namespaces: it sets up the mounts
// and the network, confines this thread, starts the program from it, reaps
// every process of the namespace and returns the program's status. When
// it exits, the kernel kills whatever is left in the namespace.
//
// X5: the launcher is PID 1; its death is the death of the call.
func launch(s spec, env []string) (int, error) {
	// The proxy's socket is in a folder the private /tmp covers: reach it
	// through a descriptor opened before.
	proxyDir := -1
	if s.Proxy != "" {
		fd, err := unix.Open(filepath.Dir(s.Proxy), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, fmt.Errorf("network proxy: %w", err)
		}
		proxyDir = fd
	}
	if err := setupMounts(s); err != nil {
		return 0, err
	}
	if s.Net != NetOn {
		if err := loopbackUp(); err != nil {
			return 0, fmt.Errorf("loopback: %w", err)
		}
	}
	if proxyDir >= 0 {
		port, err := bridge(fmt.Sprintf("/proc/self/fd/%d/%s", proxyDir, filepath.Base(s.Proxy)))
		if err != nil {
			return 0, err
		}
		env = egress.Environ(env, port)
	}
	cgfd, err := bound(s)
	if err != nil {
		return 0, err
	}
	if err := confine(s.Plan); err != nil {
		return 0, err
	}
	if s.Probe {
		return 0, nil
	}
	// A signal for the call (fsd's SIGTERM) reaches every process of it:
	// kill(-1) from PID 1 is every other process of the namespace.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for sig := range sigs {
			_ = syscall.Kill(-1, sig.(syscall.Signal))
		}
	}()
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	for i := range s.Files {
		files = append(files, os.NewFile(uintptr(3+i), "extra"))
	}
	sys := &syscall.SysProcAttr{}
	if cgfd >= 0 {
		sys.UseCgroupFD, sys.CgroupFD = true, cgfd
	}
	p, err := os.StartProcess(s.Path, s.Args, &os.ProcAttr{Dir: s.Dir, Env: env, Files: files, Sys: sys})
	if err != nil {
		code := exitNoExec
		if errors.Is(err, os.ErrNotExist) {
			code = exitNotFound
		}
		return 0, startError{code, fmt.Errorf("cannot start %s: %w", s.Path, unwrapPath(err))}
	}
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("wait: %w", err)
		}
		if pid != p.Pid {
			continue // an orphan of the namespace, reaped
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus(), nil
		case ws.Signaled():
			return 128 + int(ws.Signal()), nil
		}
	}
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// bound puts what this thread starts under the call's process bound: in
// the pids cgroup (v1: this thread joins, its children follow; v2: the
// returned directory fd places the child at clone), else RLIMIT_NPROC,
// counted in the call's own user namespace.
//
// X4: the program starts inside the bound.
func bound(s spec) (cgfd int, err error) {
	switch {
	case s.Cgroup != "" && s.CgroupV2:
		fd, err := unix.Open(s.Cgroup, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, fmt.Errorf("pids cgroup: %w", err)
		}
		return fd, nil
	case s.Cgroup != "":
		// "0" is the writing thread; v1's tasks file moves one thread.
		if err := os.WriteFile(filepath.Join(s.Cgroup, "tasks"), []byte("0"), 0); err != nil {
			return -1, fmt.Errorf("pids cgroup: %w", err)
		}
	case s.NProc > 0:
		// The launcher's threads count too, in the namespace's count.
		n := uint64(s.NProc + threads())
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			return -1, fmt.Errorf("RLIMIT_NPROC: %w", err)
		}
	}
	return -1, nil
}

func threads() int {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 8
	}
	return len(ents)
}

// execBwrap is the launcher of the bwrap backend: it joins the call's
// pids cgroup (or sets RLIMIT_NPROC) and becomes bwrap.
func execBwrap(s spec, env []string) error {
	switch {
	case s.Cgroup != "":
		if err := os.WriteFile(filepath.Join(s.Cgroup, "cgroup.procs"), []byte("0"), 0); err != nil {
			return fmt.Errorf("pids cgroup: %w", err)
		}
	case s.NProc > 0:
		n := uint64(s.NProc + 2)
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			return fmt.Errorf("RLIMIT_NPROC: %w", err)
		}
	}
	if err := syscall.Exec(s.Bwrap[0], s.Bwrap, env); err != nil {
		return fmt.Errorf("exec bwrap: %w", err)
	}
	return nil
}

// bridge carries connections to 127.0.0.1:PORT of the call's network
// namespace to the egress proxy's socket, for as long as the launcher
// lives, and returns PORT.
//
// X3: the only way out of the namespace under NetHosts.
func bridge(socket string) (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("network bridge: %w", err)
	}
	var d net.Dialer
	go egress.Bridge(context.Background(), ln, func(ctx context.Context) (net.Conn, error) {
		c, err := d.DialContext(ctx, "unix", socket)
		if err != nil {
			return nil, err
		}
		// A denial's reason reaches the program's stderr, the launcher's.
		return egress.WatchDenials(c, func(line string) { fmt.Fprintln(os.Stderr, line) }), nil
	})
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// bridged is the launcher bwrap starts inside its sandbox under
// NetHosts: it runs the bridge to the proxy's socket (bound into the
// sandbox), starts the program with the proxy variables and returns its
// status. bwrap's own init ends the rest when it returns.
func bridged(s spec, env []string) (int, error) {
	port, err := bridge(s.Proxy)
	if err != nil {
		return 0, err
	}
	p, err := os.StartProcess(s.Path, s.Args, &os.ProcAttr{Dir: s.Dir, Env: egress.Environ(env, port), Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		return 0, startError{exitNoExec, fmt.Errorf("cannot start %s: %w", s.Path, unwrapPath(err))}
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for sig := range sigs {
			_ = p.Signal(sig)
		}
	}()
	st, err := p.Wait()
	if err != nil {
		return 0, fmt.Errorf("wait: %w", err)
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return st.ExitCode(), nil
}

// loopbackUp brings up lo in the new network namespace: a program's own
// loopback server works; nothing else is reachable.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
