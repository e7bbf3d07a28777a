package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/runrecord"
)

// S5: the record keeps no NATS credentials, so a resume asks for them.
func newResumeCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "resume RUN|SESSION",
		Short: "Continue an interrupted run from its journal: completed model calls, tool calls and tasks are not repeated",
		Long: runArgHelp + "\n" +
			"The run keeps its id and folder; it replays what its journal holds and goes on live.\n" +
			"Given a session's name (or folder), it resumes the session's interrupted last turn.\n" +
			"It keeps the --model it started with unless given again; --trust and --approve are not taken from the record.\n" +
			"Calls that were waiting for approval ask again, as fsd run asks (answered ones, e.g. by fsd approve while the run was stopped, go on).\n" +
			"It runs the workflow run.json names (by its absolute path, so from any folder) only if fsd sealed that name and the digests\n" +
			"for this run with your key; it refuses a record without digests or whose seal does not verify, and one whose workflow,\n" +
			"script, skill manifests or skill files (instructions-file, resources, scripts/, the files a command names) changed\n" +
			"since the run started (--force runs them as they are now), or while another fsd holds the run.",
		Example: `  fsd runs                     # find the interrupted run
  fsd resume 8d7f19f8          # its id, or the end of it
  fsd resume .fsd/runs/20261130-182719-8d7f19f8 --model openai/gpt-5.4-mini`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: completeRunIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if d := sessionDir(f.sessionsDir, args[0]); d != "" {
				// A session's interrupted turn: the session's lock too.
				return resumeSession(cmd, d, f)
			}
			dir, err := findRun(f.runsDir, args[0])
			if err != nil {
				return err
			}
			if runrecord.IsSession(dir) {
				// Found under --runs-dir (the line a turn stopped for an
				// approval prints): resumed as a plain run, the whole
				// conversation would replay as one run and leave
				// session.json's turn open.
				return resumeSession(cmd, dir, f)
			}
			// The resumed run writes where its record is, whichever
			// folder this command was started in.
			f.runsDir = filepath.Dir(dir)
			var opts []engine.LoadOption
			if f.force {
				opts = append(opts, engine.IgnoreLivePID())
			}
			j, err := engine.LoadReplay(dir, opts...)
			if err != nil {
				return fail(exitProblems, "resume %s: %v", args[0], err)
			}
			defer j.Close()
			if !f.force {
				// Before the workflow run.json names is even read.
				key, err := runrecord.UserKey()
				if err != nil {
					return fail(exitProblems, "resume %s: %v", args[0], err)
				}
				if err := j.Sealed(key); err != nil {
					return fail(exitProblems, "resume %s: %v", args[0], err)
				}
			}
			if f.model == "" {
				f.model = j.Summary.Meta["model"]
			}
			if f.nats == "" {
				f.nats = j.Summary.Meta["nats"]
				if strings.Contains(f.nats, redacted) {
					// Resuming in process would run again what workers
					// may still be running: ask for the URL instead.
					return usage("resume %s: its tasks went to NATS at %s, and the record keeps no credentials; give --nats URL again", args[0], f.nats)
				}
			}
			// The record is data, not authority: trust comes from this
			// command line and the workflow's folder only.
			if t := j.Summary.Meta["trust"]; t != "" && len(f.trust) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "fsd: resume: not re-applying the run's --trust %s; give --trust again to let those skills run commands\n",
					strings.Join(filepath.SplitList(t), " --trust "))
			}
			f.color = useColor(cmd, cmd.ErrOrStderr())
			return execute(cmd.Context(), j.Summary.Workflow, f, j, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&f.events, "events", "", "write the event stream to stdout: json")
	_ = cmd.RegisterFlagCompletionFunc("events", cobra.FixedCompletions([]string{"json"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().StringVar(&f.runsDir, "runs-dir", "", runsDirUsage)
	cmd.Flags().StringVar(&f.sessionsDir, "sessions-dir", "", sessionsDirUsage)
	cmd.Flags().BoolVar(&f.force, "force", false, "resume even if the run's files changed, its record has no digests or no valid seal, or its recorded pid is alive but not fsd")
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "debug logs on stderr")
	cmd.Flags().BoolVar(&f.otelContent, "otel-content", false, otelContentUsage)
	cmd.Flags().StringVar(&f.model, "model", "", "model override (default: the one the run started with)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "fail the resumed run after this long (default: no limit)")
	addTrustFlag(cmd, &f)
	addDurabilityFlag(cmd, &f)
	addStrictFlag(cmd, &f)
	cmd.Flags().StringVar(&f.nats, "nats", "", "NATS server the run's tasks go to (default: the one it started with, or the workflow's board.nats)")
	addNATSAuthFlags(cmd, &f.natsAuth)
	addApprovalFlags(cmd, &f)
	return cmd
}
