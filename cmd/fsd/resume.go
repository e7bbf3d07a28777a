package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/engine"
)

func newResumeCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "resume RUN",
		Short: "Continue an interrupted run from its journal: completed model calls, tool calls and tasks are not repeated",
		Long: "RUN is a run id under --runs-dir (see fsd runs) or the path of a run record folder.\n" +
			"The run keeps its id and folder; it replays what its journal holds and goes on live.\n" +
			"It keeps the --model and --trust it started with unless given again.",
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if _, err := os.Stat(filepath.Join(dir, "run.json")); err != nil {
				dir = filepath.Join(f.runsDir, args[0])
			}
			j, err := engine.LoadJournal(dir)
			if err != nil {
				return fail(exitProblems, "resume %s: %v", args[0], err)
			}
			if f.model == "" {
				f.model = j.Summary.Meta["model"]
			}
			if t := j.Summary.Meta["trust"]; t != "" && len(f.trust) == 0 {
				f.trust = filepath.SplitList(t)
			}
			return execute(cmd.Context(), j.Summary.Workflow, f, j, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&f.events, "events", "", "write the event stream to stdout: json")
	cmd.Flags().StringVar(&f.runsDir, "runs-dir", filepath.Join(".fsd", "runs"), "where run records are")
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "debug logs on stderr")
	cmd.Flags().StringVar(&f.model, "model", "", "model override (default: the one the run started with)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "fail the resumed run after this long (default: no limit)")
	addTrustFlag(cmd, &f)
	return cmd
}
