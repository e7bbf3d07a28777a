package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/journal"
)

func newRunsPruneCmd(runsDir *string) *cobra.Command {
	var (
		olderThan string
		dryRun    bool
	)
	cmd := &cobra.Command{
		Use:   "prune --older-than AGE",
		Short: "Remove the records of runs older than AGE; never a running run",
		Long: `Remove run records under --runs-dir whose run started more than AGE ago. AGE is
a number of days (7d) or weeks (2w), or a Go duration (36h, 90m). A run that is
still going, or that another fsd holds (a resume in progress), is never removed,
however old. A folder whose run died before writing run.json is removed like a
run started when its id says.`,
		Example: `  fsd runs prune --older-than 7d
  fsd runs prune --older-than 36h --dry-run`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan == "" {
				return usage("give --older-than AGE, e.g. --older-than 7d")
			}
			age, err := parseAge(olderThan)
			if err != nil {
				return usage("--older-than %q: %v", olderThan, err)
			}
			return pruneRuns(cmd.OutOrStdout(), runsDirOr(*runsDir, "."), age, dryRun, time.Now())
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "remove runs started longer ago than this: 7d, 2w, 36h")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed, remove nothing")
	_ = cmd.RegisterFlagCompletionFunc("older-than", cobra.FixedCompletions([]string{"1d", "7d", "30d"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// parseAge reads 7d, 2w, or anything time.ParseDuration takes. It must be
// positive: "older than 0" would be every run.
func parseAge(s string) (time.Duration, error) {
	var d time.Duration
	unit := map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour}
	if u, ok := unit[s[len(s)-1:]]; ok {
		n, err := strconv.ParseFloat(s[:len(s)-1], 64)
		if err != nil {
			return 0, errors.New("want a number of days (7d) or weeks (2w), or a duration like 36h")
		}
		d = time.Duration(n * float64(u))
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, errors.New("want a number of days (7d) or weeks (2w), or a duration like 36h")
		}
	}
	if d <= 0 {
		return 0, errors.New("the age must be more than zero")
	}
	return d, nil
}

func pruneRuns(w io.Writer, dir string, age time.Duration, dryRun bool, now time.Time) error {
	rows, _, err := loadRuns(dir, now) // a damaged record is never pruned
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(w, "no runs in %s\n", dir)
		return nil
	}
	if err != nil {
		return fail(exitProblems, "%v", err)
	}
	cutoff := now.Add(-age)
	removed, kept, busy := 0, 0, 0
	var failed []string
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	for _, r := range rows {
		if r.Started.IsZero() || !r.Started.Before(cutoff) {
			kept++
			continue
		}
		if r.Summary.Going() { // a process holds it
			busy++
			continue
		}
		// The lock is what a live run or resume holds: taking it proves
		// nobody is writing this record, and keeps anyone from starting
		// to while it goes.
		lock, err := journal.Lock(r.Dir)
		if errors.Is(err, journal.ErrLocked) {
			busy++
			continue
		}
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", r.ID, err))
			continue
		}
		if !dryRun {
			err = os.RemoveAll(r.Dir)
		}
		_ = lock.Unlock()
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", r.ID, err))
			continue
		}
		removed++
		fmt.Fprintf(w, "%s %s (%s, started %s)\n", verb, r.ID, r.Status, r.Started.Local().Format("2006-01-02 15:04"))
	}
	summary := fmt.Sprintf("%s %s, kept %d", verb, plural(removed, "run"), kept)
	if busy > 0 {
		summary += fmt.Sprintf(", skipped %d still running", busy)
	}
	fmt.Fprintln(w, summary)
	if len(failed) > 0 {
		return fail(exitProblems, "could not remove %s", strings.Join(failed, ", "))
	}
	return nil
}
