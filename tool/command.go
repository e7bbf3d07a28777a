package tool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/fsdrun/fsd/internal/proc"
	"github.com/fsdrun/fsd/internal/sandbox"
)

// CallIDs name one call to the program it runs, as FSD_RUN_ID and
// FSD_CALL_ID. Both are stable across fsd resume, so a tool can make its
// side effect idempotent by keying it on FSD_CALL_ID.
type CallIDs struct {
	Run, Call string
}

type callIDsKey struct{}

// WithCallIDs returns ctx carrying the ids the next Call gives a command.
func WithCallIDs(ctx context.Context, ids CallIDs) context.Context {
	return context.WithValue(ctx, callIDsKey{}, ids)
}

// CallIDsFrom returns the ids WithCallIDs put in ctx, for tools that are
// not commands (an MCP call sends them in its _meta).
func CallIDsFrom(ctx context.Context) (CallIDs, bool) {
	ids, ok := ctx.Value(callIDsKey{}).(CallIDs)
	return ids, ok
}

func callIDs(ctx context.Context) CallIDs {
	ids, _ := ctx.Value(callIDsKey{}).(CallIDs)
	return ids
}

func (c *Tool) runCommand(ctx context.Context, in map[string]any) Result {
	argv := make([]string, len(c.argv))
	for i, tm := range c.argv {
		a, err := tm.Execute(in)
		if err != nil {
			return errorf("command argument %d: %s", i, templateError(err))
		}
		argv[i] = a
	}
	return c.exec(ctx, argv)
}

// exec runs argv (no shell) in the workspace (without one, the skill's
// folder) with the tool's environment, timeout and output caps.
//
// J9: the workspace is the working folder, the skill's is SKILL_DIR.
func (c *Tool) exec(ctx context.Context, argv []string) Result {
	name := argv[0]
	if name == "" {
		return errorf("the command's program is empty after filling in the arguments")
	}
	runCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	policy := c.policy()
	cmd, err := proc.Command(runCtx, proc.Program{Argv: argv, Root: c.dir, Dir: c.work, Env: c.env, Set: append(callIDs(ctx).environ(), c.set...),
		LookupEnv: c.lookupEnv, Sandbox: policy, Wrap: c.wrap})
	if err != nil {
		// No sandbox to be had: the program does not run unconfined.
		return errorf("%q did not run: %v", name, err)
	}
	// Both keep maskSlack bytes past their cut, so that a secret the cut
	// would split is masked whole before the cut is made.
	stdout := &capped{max: MaxOutputBytes + maskSlack}
	stderrBuf := proc.NewTail(StderrTail + maskSlack)
	if c.merged {
		both := &locked{w: stdout}
		err = proc.Run(cmd, both, both)
	} else {
		err = proc.Run(cmd, stdout, stderrBuf)
	}
	out := c.cleanHead(stdout)
	stderr := c.cleanTail(stderrBuf)
	switch {
	case err == nil:
		if out == "" {
			out = "(no output)"
		}
		return Result{Text: out, Truncated: stdout.over(MaxOutputBytes)}
	case ctx.Err() != nil:
		return errorf("cancelled: %v", context.Cause(ctx))
	case runCtx.Err() != nil:
		return Result{Text: c.withOutput(fmt.Sprintf("timed out after %s", c.timeout), out, stderr), IsError: true, Truncated: stdout.over(MaxOutputBytes)}
	case errors.Is(err, exec.ErrNotFound):
		return errorf("command not found: %q is not in PATH", name)
	case errors.Is(err, fs.ErrNotExist):
		return errorf("command not found: %q does not exist in the skill folder", name)
	case errors.Is(err, fs.ErrPermission):
		return errorf("cannot run %q: permission denied (is it executable?)", name)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		status := fmt.Sprintf("exited with status %d", ee.ExitCode())
		if ee.ExitCode() < 0 {
			status = "killed: " + ee.String()
		}
		if policy != nil {
			// What the sandbox denied and which setting allows it, when
			// the end of what it printed points at it.
			said := stderr
			if c.merged {
				said = out
			}
			if why := sandbox.Explain(said, *policy); why != "" {
				status += ". " + why
			}
		}
		return Result{Text: c.withOutput(status, out, stderr), IsError: true, Truncated: stdout.over(MaxOutputBytes)}
	}
	return errorf("cannot run %q: %v", name, err)
}

// maskSlack is how far past a cap output is kept for masking: a secret up
// to this long that a cut would split is still masked whole.
const maskSlack = 4 << 10

// cleanHead is stdout masked, then cut to MaxOutputBytes and marked when
// the program printed more.
//
// S8: masked before the cut, so no part of a secret is left.
func (c *Tool) cleanHead(w *capped) string {
	s := string(w.buf)
	if c.mask != nil {
		s = c.mask(s)
	}
	if !w.over(MaxOutputBytes) {
		return s
	}
	n := MaxOutputBytes
	if w.total > int64(len(w.buf)) {
		// The buffer's end may split a secret, which masking leaves; when
		// masking shortened the text before it, a cut at n would keep it.
		n = max(min(n, len(s)-maskSlack), 0)
	}
	return cutUTF8(s, n) + fmt.Sprintf("\n[output truncated at %d MiB]", MaxOutputBytes>>20)
}

// cleanTail is stderr's end masked, then cut to its last StderrTail bytes.
func (c *Tool) cleanTail(t *proc.Tail) string {
	raw := t.String()
	s := raw
	if c.mask != nil {
		s = c.mask(s)
	}
	start := max(len(s)-StderrTail, 0)
	if len(raw) > t.Max-utf8.UTFMax {
		// stderr's start may have been dropped inside a secret, which
		// masking leaves; when masking shortened the text after it, the
		// last StderrTail bytes would reach it.
		start = min(max(start, maskSlack), len(s))
	}
	if start == 0 {
		return s
	}
	s = s[start:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}

// cutUTF8 is s cut to at most n bytes, not ending on half a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for i := 0; i < utf8.UTFMax && len(s) > 0 && !utf8.ValidString(s[max(len(s)-utf8.UTFMax, 0):]); i++ {
		s = s[:len(s)-1]
	}
	return s
}

// withOutput appends what a failed command printed to its status line.
func (c *Tool) withOutput(status, stdout, stderr string) string {
	var b strings.Builder
	b.WriteString(status)
	if stderr != "" {
		fmt.Fprintf(&b, "\nstderr (last %d KiB):\n%s", StderrTail>>10, stderr)
	}
	if stdout != "" {
		if c.merged {
			b.WriteString("\noutput:\n")
		} else {
			b.WriteString("\nstdout:\n")
		}
		b.WriteString(stdout)
	}
	return b.String()
}

// environ is what a command is told of its call: FSD_RUN_ID and
// FSD_CALL_ID, each when known.
//
// J7: FSD_RUN_ID and FSD_CALL_ID, stable across resumes.
func (ids CallIDs) environ() []string {
	var env []string
	for _, kv := range [][2]string{{"FSD_RUN_ID", ids.Run}, {"FSD_CALL_ID", ids.Call}} {
		if kv[1] != "" {
			env = append(env, kv[0]+"="+kv[1])
		}
	}
	return env
}

// locked serialises the writes of a program's stdout and stderr into one
// writer.
type locked struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *locked) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// capped keeps the first max bytes written and counts the rest, so a
// command printing 100 MB costs 1 MiB of memory. It never fails a write:
// the command runs as it would unobserved.
type capped struct {
	max   int
	buf   []byte
	total int64
}

func (w *capped) Write(p []byte) (int, error) {
	w.total += int64(len(p))
	if room := w.max - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// over reports whether more than n bytes were written.
func (w *capped) over(n int) bool { return w.total > int64(n) }
