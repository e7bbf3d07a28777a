package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes. Every command maps its outcome to one of these; nothing else
// calls os.Exit.
const (
	exitOK       = 0 // success
	exitProblems = 1 // problems found, or the run failed (a strict run's skipped skill or MCP server that cannot start included)
	exitUsage    = 2 // bad usage: a flag, an argument, a file named that is not there
	exitInternal = 3 // fsd itself failed
	exitWaiting  = 4 // the run stopped: a call waits for approval (fsd approve, then fsd resume)
)

// exitError carries an exit code out of a command. An empty message means
// the command already printed what the user needs.
//
// The wrapping rule: each layer adds its context once. A command's message
// starts with what the user asked for (the run, the file), never with the
// command's own name (the user just typed it), and the `fsd: ` prefix is
// added once, by printError.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// fail returns an error that exits with code after printing its message.
func fail(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

// usage returns a usage error (exit 2).
func usage(format string, args ...any) error { return fail(exitUsage, format, args...) }

// usageArgs turns cobra's argument errors into usage errors (exit 2) that
// say what the command takes, what it got, and where its help is.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		err := check(cmd, args)
		if err == nil {
			return nil
		}
		if strings.HasPrefix(err.Error(), "unknown command") {
			return usage("%v (see %s --help)", err, cmd.CommandPath())
		}
		want := "no arguments"
		if _, a, ok := strings.Cut(cmd.Use, " "); ok {
			want = a
		}
		got := "none"
		if len(args) > 0 {
			got = fmt.Sprintf("%d: %s", len(args), strings.Join(args, " "))
		}
		name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
		return usage("%s takes %s; got %s (see %s --help)", name, want, got, cmd.CommandPath())
	}
}

// printError writes err as the one `fsd: ` line on stderr and returns the
// exit code it carries. Errors without a code (cobra's own: an unknown
// command or flag) are usage errors.
func printError(stderr io.Writer, err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintf(stderr, "fsd: %s\n", oneLine(ee.msg))
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "fsd: %v\n", oneLine(err.Error()))
	return exitUsage
}

// oneLine folds a message that spans lines (a task's schema violations, a
// model's multi-line error text) into the one line the CLI promises, so a
// script reading stderr's last line gets all of it: lines join with "; ",
// or with a space after a line ending in ":" (a list's lead-in).
func oneLine(msg string) string {
	if !strings.ContainsAny(msg, "\r\n") {
		return msg
	}
	var b strings.Builder
	for _, l := range strings.FieldsFunc(msg, func(r rune) bool { return r == '\n' || r == '\r' }) {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if b.Len() > 0 {
			if strings.HasSuffix(b.String(), ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(l)
	}
	return b.String()
}
