package main

import (
	"fmt"
	"io"
	"os"

	// Imported for its initialisation, which runs before the packages
	// that make starting costly (design row I1).
	"github.com/fsdrun/fsd/internal/gcpace"
	_ "github.com/fsdrun/fsd/internal/startup"
	"github.com/spf13/cobra"
)

// commands are fsd's subcommands, by the name that calls each.
var commands = []struct {
	name string
	cmd  func() *cobra.Command
}{
	{"validate", newValidateCmd},
	{"schema", newSchemaCmd},
	{"run", newRunCmd},
	{"chat", newChatCmd},
	{"approve", newApproveCmd},
	{"context", newContextCmd},
	{"graph", newGraphCmd},
	{"runs", newRunsCmd},
	{"resume", newResumeCmd},
	{"sessions", newSessionsCmd},
	{"version", newVersionCmd},
	{"init", newInitCmd},
	{"show", newShowCmd},
	{"ui", newUICmd},
	{"serve", newServeCmd},
	{"report", newReportCmd},
	{"mcp", newMCPCmd},
	{"worker", newWorkerCmd},
	{"eval", newEvalCmd},
}

// newRootCmd is fsd with every subcommand.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	return newRootCmdFor(nil, stdout, stderr)
}

// newRootCmdFor (I2) is fsd with only the subcommand args call when their
// first word names one, else with every subcommand (help, completion, a
// flag first or a mistyped name, whose suggestion needs them all). Making
// a subcommand defines its flags and their defaults; a command runs
// without the others'.
func newRootCmdFor(args []string, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "fsd",
		Short:         "Run and validate LLM agent skills declared in YAML",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Only --version prints it: the template calls versionLine then,
		// not every command at start.
		Version: "fsd",
		Example: `  fsd init hello && cd hello    # a skill, a workflow and a script that run offline
  fsd validate .                # what CI runs
  fsd run hello.workflow.yaml   # the answer on stdout, the board on stderr`,
	}
	root.SetVersionTemplate("{{versionLine}}\n")
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
	for _, c := range commands {
		if len(args) > 0 && c.name == args[0] {
			root.AddCommand(c.cmd())
			return root
		}
	}
	for _, c := range commands {
		root.AddCommand(c.cmd())
	}
	return root
}

func init() { cobra.AddTemplateFunc("versionLine", versionLine) }

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
	root := newRootCmdFor(args, stdout, stderr)
	root.SetIn(stdin)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	return printError(stderr, err)
}

func main() {
	gcpace.Start()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
