package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/view"
)

func newRunsCmd() *cobra.Command {
	var (
		runsDir string
		format  string
		limit   int
	)
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List runs with status, start, duration and tokens, newest first",
		Long: `List the run records under --runs-dir, newest first. A run whose record says
running but that no process holds (it was killed) shows as interrupted: fsd resume
continues it. A folder whose run died before writing run.json shows as incomplete.
A run with calls waiting for approval shows as waiting: fsd approve answers them;
"waiting (stopped)" is a run that stopped to wait (nobody could answer it), and an
interrupted one says how many calls wait: fsd resume goes on once they are answered.
"fsd show RUN" shows one run; "fsd runs prune" removes old ones.`,
		Example: `  fsd runs
  fsd runs --limit 5
  fsd runs --format json | jq -r '.[] | select(.status == "failed") | .id'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			if limit < 0 {
				return usage("--limit %d is negative; 0 lists every run", limit)
			}
			return listRuns(cmd.OutOrStdout(), cmd.ErrOrStderr(), runsDirOr(runsDir, "."), limit, format == "json", time.Now())
		},
	}
	cmd.PersistentFlags().StringVar(&runsDir, "runs-dir", "", runsDirUsage)
	addFormatFlag(cmd, &format, "text (a table) or json (an array)")
	cmd.Flags().IntVar(&limit, "limit", 20, "list at most this many runs, newest first; 0 lists all")
	cmd.AddCommand(newRunsShowCmd(&runsDir), newRunsPruneCmd(&runsDir))
	return cmd
}

// runRow is one run as fsd runs lists it. Status is the run's current
// status (runrecord.ReadRun): a live run no process holds is interrupted.
type runRow struct {
	runrecord.Summary
	Status   runrecord.Status `json:"status"`
	Duration float64          `json:"duration_seconds,omitempty"`
	Dir      string           `json:"dir"`
}

// loadRuns reads every run record under dir, newest first, those without
// a run.json too (incomplete). A run.json that cannot be read or decoded
// is returned in unreadable, so a listing can say so instead of hiding a
// damaged record.
func loadRuns(dir string, now time.Time) (rows []runRow, unreadable []error, err error) {
	sums, unreadable, err := runrecord.Scan(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range sums {
		rows = append(rows, newRunRow(filepath.Join(dir, s.ID), s, now))
	}
	return rows, unreadable, nil
}

func loadRun(dir string, now time.Time) (runRow, error) {
	s, err := runrecord.ReadRun(dir)
	if err != nil {
		return runRow{}, err
	}
	return newRunRow(dir, s, now), nil
}

// newRunRow is the row of the run s (ReadRun's) in dir.
func newRunRow(dir string, s runrecord.Summary, now time.Time) runRow {
	row := runRow{Summary: s, Status: s.Status, Dir: dir}
	end := s.Finished
	if s.Going() {
		end = now
	}
	if !end.IsZero() && !s.Started.IsZero() {
		row.Duration = end.Sub(s.Started).Seconds()
	}
	return row
}

func listRuns(w, stderr io.Writer, dir string, limit int, asJSON bool, now time.Time) error {
	rows, unreadable, err := loadRuns(dir, now)
	if errors.Is(err, os.ErrNotExist) {
		rows, err = nil, nil
	}
	if err != nil {
		return fail(exitProblems, "%v", err)
	}
	for _, err := range unreadable {
		fmt.Fprintf(stderr, "fsd: runs: skipped a damaged record: %v\n", err)
	}
	more := 0
	if limit > 0 && len(rows) > limit {
		more = len(rows) - limit
		rows = rows[:limit]
	}
	if asJSON {
		if rows == nil {
			rows = []runRow{}
		}
		return writeIndentedJSON(w, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(w, "no runs in %s\n", dir)
		return nil
	}
	priced := false
	for _, r := range rows {
		priced = priced || r.Cost > 0
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// The four token figures, as run.json, the task events and the live
	// board give them; "~" marks fsd's own estimates (scripted model).
	head := "RUN\tSTATUS\tSTARTED\tDURATION\tIN\tCACHED\tWRITTEN\tOUT\t"
	if priced {
		head += "COST\t"
	}
	fmt.Fprintln(tw, head+"WORKFLOW")
	for _, r := range rows {
		est := ""
		if r.TokensEstimated {
			est = "~"
		}
		status := string(r.Status)
		switch n := len(r.Pending); {
		case n > 0 && r.Status != runrecord.Waiting:
			// Stopped while calls waited: fsd approve, then fsd resume.
			status += fmt.Sprintf(" (%d waiting)", n)
		case r.Status == runrecord.Waiting && !r.Summary.Going():
			// Stopped to wait: fsd approve, then fsd resume.
			status += " (stopped)"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s%d\t%d\t%d\t%s%d\t", r.ID, status, r.Started.Local().Format("2006-01-02 15:04:05"),
			r.durationText(), est, r.InputTokens, r.CachedInputTokens, r.CacheWriteTokens, est, r.OutputTokens)
		if priced {
			line += view.Cost(r.Cost) + "\t"
		}
		fmt.Fprintln(tw, line+r.ShownWorkflow())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if more > 0 {
		fmt.Fprintf(stderr, "%s not shown; --limit 0 lists all\n", plural(more, "older run"))
	}
	return nil
}

func (r runRow) durationText() string {
	if r.Duration == 0 && r.Finished.IsZero() {
		return "-"
	}
	return time.Duration(r.Duration * float64(time.Second)).Round(time.Millisecond).String()
}

func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// findRun resolves a RUN argument with runrecord.Find; a RUN that names
// no run, or several, is a usage error that says where to look.
func findRun(runsDir, arg string) (string, error) {
	if arg == "" {
		return "", usage("give a run id; fsd runs lists them")
	}
	runsDir = runsDirOr(runsDir, ".")
	if d := sessionDir("", arg); d != "" {
		if _, err := os.Stat(filepath.Join(runsDir, arg, runrecord.RunFile)); err != nil {
			// A session named arg before a run whose id only contains
			// it: else fsd approve NAME CALL answers that run's call.
			return d, nil
		}
	}
	dir, err := runrecord.Find(runsDir, arg)
	var amb *runrecord.AmbiguousError
	switch {
	case err == nil:
		return dir, nil
	case errors.As(err, &amb):
		return "", usage("%v", err)
	case !errors.Is(err, runrecord.ErrNoRun):
		return "", fail(exitProblems, "%v", err)
	}
	if d := sessionDir("", arg); d != "" {
		// A session is a run too: fsd show NAME, fsd approve NAME CALL.
		return d, nil
	}
	return "", usage("no run %s in %s; %s lists them", arg, runsDir, runsHint(runsDir))
}

// runArgHelp says what a RUN argument may be, for every command taking one.
const runArgHelp = "RUN is a run id under --runs-dir, its start or any other part of it that names one run\n" +
	"(the 8 characters after the last dash are enough), the path of a run record folder, or the name of a session\n" +
	"(its record, under .fsd/sessions)."

// runsHint is the fsd runs command that lists runsDir.
func runsHint(runsDir string) string {
	if sameDir(runsDir, runsDirOr("", ".")) {
		return "fsd runs"
	}
	return "fsd runs --runs-dir " + runsDir
}

// completeRunIDs completes a RUN argument with the ids under --runs-dir,
// newest first, each described by status and workflow.
func completeRunIDs(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	dir := ""
	if f := cmd.Flags().Lookup("runs-dir"); f != nil {
		dir = f.Value.String()
	}
	dir = runsDirOr(dir, ".")
	rows, _, _ := loadRuns(dir, time.Now())
	out := make([]cobra.Completion, 0, len(rows))
	for _, r := range rows {
		out = append(out, cobra.CompletionWithDesc(r.ID, string(r.Status)+" "+r.ShownWorkflow()))
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}
