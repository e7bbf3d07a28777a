package main

import (
	"fmt"
	"io"
	"os"

	// Imported for its initialisation, which runs before the packages
	// that make starting costly (design row I1).
	_ "github.com/fsdrun/fsd/internal/startup"
	"github.com/spf13/cobra"
)

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "fsd",
		Short:         "Run and validate LLM agent skills declared in YAML",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionLine(),
		Example: `  fsd init hello && cd hello    # a skill, a workflow and a script that run offline
  fsd validate .                # what CI runs
  fsd run hello.workflow.yaml   # the answer on stdout, the board on stderr`,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	// -v is verbose in every command (run, resume, worker and mcp serve
	// define their own); the version is --version or -V, as in most
	// tools that also have a verbose flag.
	root.Flags().BoolP("version", "V", false, "print fsd's version")
	root.PersistentFlags().BoolP("verbose", "v", false, "more detail on stderr, where the command has more to say")
	addColorFlag(root)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return usage("%v", err)
	})
	root.AddCommand(
		newValidateCmd(),
		newSchemaCmd(),
		newRunCmd(),
		newChatCmd(),
		newApproveCmd(),
		newContextCmd(),
		newGraphCmd(),
		newRunsCmd(),
		newResumeCmd(),
		newSessionsCmd(),
		newVersionCmd(),
		newInitCmd(),
		newShowCmd(),
		newUICmd(),
		newServeCmd(),
		newReportCmd(),
		newMCPCmd(),
		newWorkerCmd(),
		newEvalCmd(),
	)
	return root
}

// run executes the CLI and returns the process exit code. It never panics
// at the user: an unexpected panic becomes one line on stderr and exit 3.
func run(args []string, stdout, stderr io.Writer) int {
	return runIO(args, os.Stdin, stdout, stderr)
}

// runIO is run with stdin given, for `-i -`.
func runIO(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "fsd: internal error: %s\n", oneLine(fmt.Sprint(r)))
			code = exitInternal
		}
	}()
	root := newRootCmd(stdout, stderr)
	root.SetIn(stdin)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	return printError(stderr, err)
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
