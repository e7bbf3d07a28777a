package main

import (
	"io"
	"time"

	"github.com/spf13/cobra"
)

// showFlags are fsd show's flags. The level is the summary unless
// requests is set; task and step pick requests, so they set it too.
type showFlags struct {
	requests bool
	task     string
	step     int
	format   string
}

func newShowCmd() *cobra.Command {
	var runsDir string
	cmd := showCmd(&runsDir)
	cmd.Flags().StringVar(&runsDir, "runs-dir", "", runsDirUsage)
	return cmd
}

// newRunsShowCmd is `fsd runs show`, the same command under the runs
// command (whose --runs-dir it takes), hidden so help names one of them.
func newRunsShowCmd(runsDir *string) *cobra.Command {
	cmd := showCmd(runsDir)
	cmd.Hidden = true
	return cmd
}

func showCmd(runsDir *string) *cobra.Command {
	var f showFlags
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Show one run: a summary, or with --requests every model call as the model received it",
		Long: `Show one run from its record. By default, a summary: status, workflow, duration,
tokens and cost, input, each task (status, agent, time, tokens, error), typed
outputs, the calls waiting for approval, and the answer or error.

With --requests, every model call as the model received it: the context block,
the window of messages, the tools with their token cost, then the response,
tool calls and results, and usage per step. --task and --step pick some of
them, and need no --requests.

` + runArgHelp,
		Example: `  fsd show 20261130-182719-8d7f19f8
  fsd show 8d7f19f8 --format json | jq .tasks
  fsd show 8d7f19f8 --requests
  fsd show 8d7f19f8 --task analysis --step 1
  fsd show 8d7f19f8 --requests --format json | jq '.[] | select(.task == "brief") | .steps[0].request.messages'`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeRunIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return show(cmd.OutOrStdout(), *runsDir, args[0], f)
		},
	}
	cmd.Flags().BoolVar(&f.requests, "requests", false, "print every model call as the model received it, not the summary")
	cmd.Flags().StringVar(&f.task, "task", "", "only the model calls of task `ID` (host: the host's); implies --requests")
	cmd.Flags().IntVar(&f.step, "step", 0, "only step `N` of each generator (1 is the first model call); implies --requests")
	addFormatFlag(cmd, &f.format, "text or json")
	return cmd
}

func show(w io.Writer, runsDir, run string, f showFlags) error {
	if err := checkFormat(f.format); err != nil {
		return err
	}
	if f.step < 0 {
		return usage("--step counts from 1")
	}
	// A run named that is not there is a usage error (exit 2), as for
	// resume, and an id's random tail is enough.
	dir, err := findRun(runsDir, run)
	if err != nil {
		return err
	}
	if f.format != "json" && isTerminal(w) {
		pw := &printableWriter{w: w}
		defer pw.flush()
		w = pw
	}
	if f.requests || f.task != "" || f.step > 0 {
		return showRequests(w, dir, f)
	}
	d, err := loadRunDetail(dir, time.Now())
	if err != nil {
		return fail(exitProblems, "%v", err)
	}
	if f.format == "json" {
		return writeIndentedJSON(w, d)
	}
	printRunDetail(w, d)
	return nil
}
