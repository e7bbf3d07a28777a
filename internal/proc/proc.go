package proc

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/fsdrun/fsd/internal/sandbox"
)

// Wrap confines a prepared program as sandbox.Wrap does; tests pass one
// that fails, to see a machine without a sandbox.
type Wrap func(cmd *exec.Cmd, p sandbox.Policy) (cleanup func(), err error)

// WaitDelay bounds how long a finished or killed program's output may
// stay open, held by a grandchild that left its process group (setsid):
// after it, what the program wrote so far is all there is.
const WaitDelay = 2 * time.Second

// Program is a program to start for a skill.
type Program struct {
	// Argv is the program and its arguments, passed without a shell. A
	// program named by a relative path (./scripts/fetch.sh) is in Root,
	// not wherever fsd was started.
	Argv []string
	// Root is the skill's folder, absolute.
	Root string
	// Dir is the working folder: the run's workspace, which a sandbox
	// makes writable; "" is Root.
	Dir string
	// Env names the variables passed from LookupEnv besides PATH and HOME.
	Env []string
	// Set are NAME=value pairs fsd gives the program (its call's ids);
	// they win over a variable of the same name in Env.
	Set []string
	// LookupEnv is where Env's values come from; nil is os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Sandbox confines the program (package sandbox). Nil runs it
	// unconfined: only a workflow's `sandbox: off` asks for that.
	Sandbox *sandbox.Policy
	// Wrap applies Sandbox; nil is sandbox.Wrap.
	Wrap Wrap
}

// Cmd is a program Command prepared: the exec.Cmd to start, and what its
// sandbox holds until the program has been waited for.
type Cmd struct {
	*exec.Cmd
	cleanup func()
}

// Cleanup releases what the program's sandbox holds. Call it once the
// program has been waited for (Run does); later calls do nothing.
func (c *Cmd) Cleanup() {
	if c.cleanup != nil {
		c.cleanup()
		c.cleanup = nil
	}
}

// Command prepares p's process: its program resolved, its environment,
// its own process group (Pdeathsig on Linux), confined by p.Sandbox, and,
// when ctx ends before the program does, its whole group killed. Start it
// with Run, or hand its Cmd to whatever starts it (an MCP transport),
// KillGroup it when done and Cleanup once it has been waited for.
//
// It fails when the sandbox cannot be had (an error wrapping
// sandbox.ErrUnavailable that names the fixes): the program must not run
// then, rather than run unconfined.
//
// J6: the program's own process group, Pdeathsig, and the group killed when
// ctx ends.
// T11: every program of a skill starts here, confined unless the workflow
// says `sandbox: off`.
func Command(ctx context.Context, p Program) (*Cmd, error) {
	name := p.Argv[0]
	if !filepath.IsAbs(name) && strings.ContainsRune(name, filepath.Separator) {
		name = filepath.Join(p.Root, name)
	}
	cmd := exec.CommandContext(ctx, name, p.Argv[1:]...)
	cmd.Dir = p.Dir
	if cmd.Dir == "" {
		cmd.Dir = p.Root
	}
	lookup := p.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	cmd.Env = Environ(lookup, p.Env, slices.Concat(p.Set, TraceEnv(ctx))...)
	cmd.WaitDelay = WaitDelay
	ownGroup(cmd)
	c := &Cmd{Cmd: cmd}
	if p.Sandbox != nil {
		if cmd.Err == nil && strings.ContainsRune(name, filepath.Separator) {
			// Inside the sandbox a missing or non-executable program is
			// the launcher's failure; found here, Start reports it as it
			// would unconfined (and the sandbox starts nothing).
			if _, err := exec.LookPath(cmd.Path); err != nil {
				cmd.Err = err
			}
		}
		wrap := p.Wrap
		if wrap == nil {
			wrap = sandbox.Wrap
		}
		cleanup, err := wrap(cmd, *p.Sandbox)
		if err != nil {
			return nil, err
		}
		c.cleanup = cleanup
	}
	return c, nil
}

// TraceEnv is the W3C trace context of ctx as the environment carries
// it, TRACEPARENT and TRACESTATE (OpenTelemetry's environment-variable
// carrier), so a program that traces its work joins the span of the call
// that started it; nil when ctx is not traced. A program started for
// several calls (a stdio MCP server) is started without one.
//
// O2: a program joins the trace of the call that started it.
func TraceEnv(ctx context.Context) []string {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	var env []string
	for _, k := range []string{"traceparent", "tracestate"} {
		if v := c[k]; v != "" {
			env = append(env, strings.ToUpper(k)+"="+v)
		}
	}
	return env
}

// Environ is a program's whole environment: the set pairs, then PATH,
// HOME and names, each read with lookup and skipped when unset. A set
// pair wins over a name it shares: it is what fsd promises the program.
// Nothing else is inherited.
//
// S1: nothing of fsd's environment is inherited but what is named.
func Environ(lookup func(string) (string, bool), names []string, set ...string) []string {
	env := make([]string, 0, len(set)+2+len(names))
	seen := map[string]bool{}
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		if !seen[k] {
			seen[k] = true
			env = append(env, kv)
		}
	}
	for _, k := range append([]string{"PATH", "HOME"}, names...) {
		if seen[k] {
			continue
		}
		seen[k] = true
		if v, ok := lookup(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Run starts cmd (from Command) and waits for it to exit, then kills its
// process group (what it started in the background dies with the call),
// then drains its output into stdout and stderr. Run owns the pipes
// rather than os/exec, so the group is killed as soon as the program
// exits, not once a background child closes its output.
func Run(cmd *Cmd, stdout, stderr io.Writer) error {
	defer cmd.Cleanup()
	// One writer for both: one pipe, so what the program writes arrives
	// in the order it wrote it.
	merged := stdout == stderr
	var readers, writers []*os.File
	for range map[bool]int{true: 1, false: 2}[merged] {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(readers)
			closeAll(writers)
			return err
		}
		readers, writers = append(readers, r), append(writers, w)
	}
	defer closeAll(readers)
	cmd.Stdout, cmd.Stderr = writers[0], writers[len(writers)-1]
	err := cmd.Start()
	// The child holds its own copies; ours would keep the pipes open.
	closeAll(writers)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for i, w := range []io.Writer{stdout, stderr}[:len(readers)] {
		wg.Go(func() { _, _ = io.Copy(w, readers[i]) })
	}
	err = cmd.Wait()
	KillGroup(cmd.Cmd)
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(WaitDelay):
		// A grandchild that left the group (setsid) still holds the
		// output: what the program wrote so far is its answer.
		closeAll(readers)
		<-drained
	}
	return err
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
