package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/engine"
)

func newRunsCmd() *cobra.Command {
	var runsDir string
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List runs with status, start, duration and tokens",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return listRuns(cmd.OutOrStdout(), runsDir, time.Now())
		},
	}
	cmd.Flags().StringVar(&runsDir, "runs-dir", filepath.Join(".fsd", "runs"), "where run records are")
	return cmd
}

func listRuns(w io.Writer, dir string, now time.Time) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(w, "no runs in %s\n", dir)
		return nil
	}
	if err != nil {
		return fail(exitProblems, "runs: %v", err)
	}
	var sums []engine.RunSummary
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "run.json"))
		if err != nil {
			continue
		}
		var s engine.RunSummary
		if json.Unmarshal(b, &s) == nil {
			sums = append(sums, s)
		}
	}
	sort.Slice(sums, func(i, j int) bool { return sums[i].Started.After(sums[j].Started) })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATUS\tSTARTED\tDURATION\tTOKENS\tWORKFLOW")
	for _, s := range sums {
		status := s.Status
		end := s.Finished
		if status == "running" {
			end = now
			if !alive(s.PID) {
				status = "interrupted" // fsd resume picks it up
				end = time.Time{}
			}
		}
		dur := "-"
		if !end.IsZero() {
			dur = end.Sub(s.Started).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", s.ID, status, s.Started.Local().Format("2006-01-02 15:04:05"),
			dur, s.InputTokens+s.OutputTokens, s.Workflow)
	}
	return tw.Flush()
}

// alive reports whether a process with pid exists.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}
