package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/proctest"
	"github.com/fsdrun/fsd/internal/testlong"
)

// The scripts of the kill trial: wrap.sh leaves work.sh running in a
// session of its own, out of the call's process group, and waits; work.sh
// says it started, then appends a line after a delay — a late side
// effect no dead run may have.
const (
	wrapScript = "setsid /bin/sh \"$DIR/work.sh\" &\nsleep 30\n"
	workScript = "echo $$ > \"$DIR/started\"\nsleep 0.3\necho late >> \"$DIR/late\"\n"
)

// fakeFsd is fsd running a sandboxed call — the shell command
// $FSD_SANDBOX_TEST_SCRIPT in the workspace $FSD_SANDBOX_TEST_DIR — with
// its own environment, printing what the call printed.
func fakeFsd() int {
	dir := os.Getenv("FSD_SANDBOX_TEST_DIR")
	forced = os.Getenv("FSD_SANDBOX_TEST_BACKEND")
	cmd := exec.Command("/bin/sh", "-c", os.Getenv("FSD_SANDBOX_TEST_SCRIPT"))
	cmd.Dir = dir
	cmd.Env = append(testEnv(dir), "DIR="+dir, trialEnv+"="+os.Getenv(trialEnv))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cleanup, err := Wrap(cmd, Policy{Workspace: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer cleanup()
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// trialEnv marks every process of one kill trial: what a process started
// inherits it, so /proc tells which processes belong to the trial.
const trialEnv = "FSD_SANDBOX_TRIAL"

// kill -9 of fsd mid-call leaves no process of the call alive and no late
// side effect, a grandchild that left the call's process group included.
func TestKillNineLeavesNothing(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			available(t, b)
			var killed []int
			for trial := range testlong.Runs(5, 100) {
				dir := t.TempDir()
				for name, text := range map[string]string{"wrap.sh": wrapScript, "work.sh": workScript} {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				token := fmt.Sprintf("%d-%s-%d", os.Getpid(), b, trial)
				fsd := fakeFsdCommand(b, dir, `/bin/sh "$DIR/wrap.sh"`, trialEnv+"="+token)
				var errOut bytes.Buffer
				fsd.Stderr = &errOut
				if err := fsd.Start(); err != nil {
					t.Fatal(err)
				}
				proctest.ReadPid(t, filepath.Join(dir, "started"))
				_ = fsd.Process.Kill()
				_ = fsd.Wait()
				if left := trialProcesses(token); len(left) > 0 {
					t.Fatalf("trial %d: processes %v of the call outlived fsd (fsd said %q)", trial, left, errOut.String())
				}
				if _, err := os.Stat(filepath.Join(dir, "late")); err == nil {
					t.Fatalf("trial %d: the call's late write landed after fsd died", trial)
				}
				killed = append(killed, fsd.Process.Pid)
			}
			// The next call removes the pids cgroups the dead fsds left.
			newCgroup(1).remove()
			for _, pid := range killed {
				if left, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/*/fsd-%d-*", pid)); len(left) > 0 {
					t.Errorf("the pids cgroups of dead fsd %d are left: %v", pid, left)
				}
			}
		})
	}
}

// trialProcesses waits, bounded, until no process carries token, and
// returns those that still do.
func trialProcesses(token string) []string {
	want := []byte(trialEnv + "=" + token + "\x00")
	var left []string
	for range 1000 {
		left = left[:0]
		pids, _ := filepath.Glob("/proc/[0-9]*/environ")
		for _, p := range pids {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, want) {
				left = append(left, strings.Split(p, "/")[2])
			}
		}
		if len(left) == 0 {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return left
}

// fakeFsdCommand is the test binary as a fake fsd that runs script
// sandboxed by backend in the workspace dir; env is added to fsd's own
// environment.
func fakeFsdCommand(backend, dir, script string, env ...string) *exec.Cmd {
	fsd := exec.Command(os.Args[0])
	fsd.Env = append([]string{"PATH=" + os.Getenv("PATH"), helperEnv + "=fakefsd", "FSD_SANDBOX_TEST_DIR=" + dir,
		"FSD_SANDBOX_TEST_BACKEND=" + backend, "FSD_SANDBOX_TEST_SCRIPT=" + script}, env...)
	return fsd
}

// A cancelled call (package proc kills its process group) leaves no
// process alive and no late side effect, a grandchild in a session of its
// own included; its pids cgroup is removed.
func TestCancelLeavesNothing(t *testing.T) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "work.sh"), []byte(workScript), 0o755); err != nil {
				t.Fatal(err)
			}
			token := fmt.Sprintf("%d-%s-cancel", os.Getpid(), b)
			cmd := exec.Command("/bin/sh", "-c", wrapScript)
			cmd.Dir = dir
			cmd.Env = append(testEnv(dir), "DIR="+dir, trialEnv+"="+token)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			cleanup := useBackend(t, b, cmd, Policy{Workspace: dir})
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			proctest.ReadPid(t, filepath.Join(dir, "started"))
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			cleanup()
			if left := trialProcesses(token); len(left) > 0 {
				t.Fatalf("processes %v of the call outlived its cancel", left)
			}
			if _, err := os.Stat(filepath.Join(dir, "late")); err == nil {
				t.Fatal("the call's late write landed after its cancel")
			}
			if left, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/pids/fsd-%d-*", os.Getpid())); len(left) > 0 {
				t.Errorf("pids cgroups left: %v", left)
			}
		})
	}
}

// SIGTERM for the call reaches the program, which may end cleanly: the
// launcher forwards it and exits with the program's status. (bwrap does
// not forward it: the call ends at once.)
func TestTermReachesProgram(t *testing.T) {
	for _, b := range []string{backendNative} {
		t.Run(b, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("/bin/sh", "-c", `trap 'echo term > "$DIR/got"; exit 7' TERM; echo $$ > "$DIR/started"; sleep 30 & wait`)
			cmd.Dir = dir
			cmd.Env = append(testEnv(dir), "DIR="+dir)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			cleanup := useBackend(t, b, cmd, Policy{Workspace: dir})
			defer cleanup()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			proctest.ReadPid(t, filepath.Join(dir, "started"))
			_ = cmd.Process.Signal(syscall.SIGTERM)
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 7 {
				t.Errorf("Wait = %v, want the program's status 7", err)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "got")); string(got) != "term\n" {
				t.Errorf("the program's trap wrote %q", got)
			}
		})
	}
}

// A pids cgroup a dead fsd left is removed by the next call even while a
// task is still in it (under load the killed tasks leave it late): the
// task is killed, the folder goes.
func TestStaleCgroupRemovedWithItsTasks(t *testing.T) {
	parents := cgroupParents()
	if len(parents) == 0 {
		t.Skip("no writable pids cgroup hierarchy")
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parents[0], fmt.Sprintf("fsd-%d-1-staletest", dead.Process.Pid))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Rmdir(dir) })
	task := exec.Command("sleep", "30")
	if err := task.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = task.Process.Kill() })
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(fmt.Sprint(task.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- task.Wait() }()
	removeStale(parents[0])
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale cgroup %s is left (stat: %v)", dir, err)
	}
	if err := <-waited; err == nil {
		t.Error("the stale cgroup's task ended by itself, want it killed")
	}
}

// A pid is reused: a cgroup whose creator's pid now names another
// process (another start time) is stale all the same; the live
// creator's own is kept.
func TestStaleCgroupOfAReusedPid(t *testing.T) {
	parents := cgroupParents()
	if len(parents) == 0 {
		t.Skip("no writable pids cgroup hierarchy")
	}
	me := os.Getpid()
	if startTime(me) == 0 {
		t.Fatal("startTime cannot read this process's start time")
	}
	reused := filepath.Join(parents[0], fmt.Sprintf("fsd-%d-%d-reusetest", me, startTime(me)-1))
	mine := filepath.Join(parents[0], fmt.Sprintf("fsd-%d-%d-reusetest", me, startTime(me)))
	for _, dir := range []string{reused, mine} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Rmdir(dir) })
	}
	removeStale(parents[0])
	if _, err := os.Stat(reused); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cgroup of an earlier process with this pid is left (stat: %v)", err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("the live creator's cgroup was removed: %v", err)
	}
}
