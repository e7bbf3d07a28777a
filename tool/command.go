package tool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// waitDelay bounds how long a finished or killed command's output pipes
// may stay open (held by a grandchild that left the process group).
const waitDelay = 2 * time.Second

func (c *Tool) runCommand(ctx context.Context, in map[string]any) Result {
	argv := make([]string, len(c.argv))
	for i, tm := range c.argv {
		var b strings.Builder
		if err := tm.Execute(&b, in); err != nil {
			return errorf("command argument %d: %s", i, templateError(err))
		}
		argv[i] = b.String()
	}
	name := argv[0]
	if name == "" {
		return errorf("the command's program is empty after filling in the arguments")
	}
	path := name
	if !filepath.IsAbs(path) && strings.ContainsRune(path, filepath.Separator) {
		// ./scripts/fetch.sh is relative to the skill folder, not to
		// wherever fsd was started.
		path = filepath.Join(c.dir, path)
	}

	runCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, path, argv[1:]...)
	cmd.Dir = c.dir
	cmd.Env = c.environ()
	stdout := &capped{max: MaxOutputBytes}
	stderr := &tail{max: StderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = waitDelay
	killGroupOnCancel(cmd)

	err := cmd.Run()
	out := stdout.String()
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		// ErrWaitDelay: the command succeeded but something it started
		// kept its output open; what it wrote so far is its answer.
		if out == "" {
			out = "(no output)"
		}
		return Result{Text: out, Truncated: stdout.truncated()}
	case ctx.Err() != nil:
		return errorf("cancelled: %v", context.Cause(ctx))
	case runCtx.Err() != nil:
		return Result{Text: withOutput(fmt.Sprintf("timed out after %s", c.timeout), out, stderr.String()), IsError: true, Truncated: stdout.truncated()}
	case errors.Is(err, exec.ErrNotFound):
		return errorf("command not found: %q is not in PATH", name)
	case errors.Is(err, fs.ErrNotExist):
		return errorf("command not found: %q does not exist in the skill folder", name)
	case errors.Is(err, fs.ErrPermission):
		return errorf("cannot run %q: permission denied (is it executable?)", name)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		status := fmt.Sprintf("exit status %d", ee.ExitCode())
		if ee.ExitCode() < 0 {
			status = "killed: " + ee.String()
		}
		return Result{Text: withOutput(status, out, stderr.String()), IsError: true, Truncated: stdout.truncated()}
	}
	return errorf("cannot run %q: %v", name, err)
}

// withOutput appends what a failed command printed to its status line.
func withOutput(status, stdout, stderr string) string {
	var b strings.Builder
	b.WriteString(status)
	if stderr != "" {
		fmt.Fprintf(&b, "\nstderr (last %d KiB):\n%s", StderrTail>>10, stderr)
	}
	if stdout != "" {
		b.WriteString("\nstdout:\n")
		b.WriteString(stdout)
	}
	return b.String()
}

// environ is the command's whole environment: PATH and HOME, plus the
// names the tool declares. Nothing else is inherited, so API keys in fsd's
// environment stay out of tools that did not ask for them.
func (c *Tool) environ() []string {
	var env []string
	seen := map[string]bool{}
	for _, k := range append([]string{"PATH", "HOME"}, c.env...) {
		if seen[k] {
			continue
		}
		seen[k] = true
		if v, ok := c.lookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
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

func (w *capped) truncated() bool { return w.total > int64(len(w.buf)) }

func (w *capped) String() string {
	if !w.truncated() {
		return string(w.buf)
	}
	b := w.buf
	// Do not end on half a character.
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.Valid(b[max(len(b)-utf8.UTFMax, 0):]); i++ {
		b = b[:len(b)-1]
	}
	return string(b) + fmt.Sprintf("\n[output truncated at %d MiB]", MaxOutputBytes>>20)
}

// tail keeps the last max bytes written.
type tail struct {
	max int
	buf []byte
}

func (w *tail) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	if len(w.buf) > 2*w.max {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-w.max:]...)
	}
	return len(p), nil
}

func (w *tail) String() string {
	b := w.buf
	if len(b) > w.max {
		b = b[len(b)-w.max:]
		// Do not start on half a character.
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return string(b)
}
