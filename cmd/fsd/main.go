package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK       = 0 // success
	exitProblems = 1 // problems found, or the run failed
	exitUsage    = 2 // bad usage
	exitInternal = 3 // fsd itself failed
)

// exitError carries an exit code out of a command. An empty message means
// the command already printed what the user needs.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func fail(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "fsd",
		Short:         "Run and validate LLM agent skills declared in YAML",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: exitUsage, msg: err.Error()}
	})
	root.AddCommand(
		newValidateCmd(),
		newSchemaCmd(),
		newRunCmd(),
		newContextCmd(),
		newGraphCmd(),
		newRunsCmd(),
		newResumeCmd(),
	)
	return root
}

// run executes the CLI and returns the process exit code. It never panics
// at the user: an unexpected panic becomes one line on stderr and exit 3.
func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "fsd: internal error: %v\n", r)
			code = exitInternal
		}
	}()
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintf(stderr, "fsd: %s\n", ee.msg)
		}
		return ee.code
	}
	// cobra's own errors (unknown command, bad args) are usage errors.
	fmt.Fprintf(stderr, "fsd: %v\n", err)
	return exitUsage
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
