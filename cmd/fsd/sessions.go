package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/runrecord"
)

const sessionsDirUsage = "where sessions are (default: .fsd/sessions beside the runs folder the workflow's, or the current, folder finds)"

// sessionsDirOr is dir when --sessions-dir gave one, else the sessions
// folder of the project from belongs to.
func sessionsDirOr(dir, from string) string {
	if dir != "" {
		return dir
	}
	return shortPath(runrecord.SessionsDirFor(from))
}

// runSessionTurn runs f.input as the next turn of session f.session.
func runSessionTurn(ctx context.Context, path string, f runFlags, cmd *cobra.Command) error {
	if f.runsDir != "" {
		return usage("--runs-dir and --session cannot be used together: a session's record is in --sessions-dir")
	}
	sess, err := openSessionCLI(sessionsDirOr(f.sessionsDir, filepath.Dir(path)), f.session, engine.OpenSession)
	if err != nil {
		return err
	}
	defer sess.Close()
	f.sess = sess
	f.color = useColor(cmd, cmd.ErrOrStderr())
	return execute(ctx, path, f, nil, cmd.OutOrStdout(), cmd.ErrOrStderr())
}

// openSessionCLI opens a session with open, its errors one line each.
func openSessionCLI(dir, name string, open func(string, string) (*engine.Session, error)) (*engine.Session, error) {
	s, err := open(dir, name)
	switch {
	case errors.Is(err, runrecord.ErrBadSessionName):
		return nil, usage("--session: %v", err)
	case err != nil:
		return nil, fail(exitProblems, "%v", err)
	}
	return s, nil
}

// resumeSession resumes the interrupted turn of the session in dir.
func resumeSession(cmd *cobra.Command, dir string, f runFlags) error {
	name := filepath.Base(dir)
	sum, err := runrecord.ReadSummary(dir)
	if err != nil {
		return fail(exitProblems, "resume session %s: %v", name, err)
	}
	if !f.force {
		key, err := runrecord.UserKey()
		if err != nil {
			return fail(exitProblems, "resume session %s: %v", name, err)
		}
		if err := (&engine.Replay{Summary: sum}).Sealed(key); err != nil {
			return fail(exitProblems, "resume session %s: %v", name, err)
		}
	}
	sess, err := openSessionCLI(filepath.Dir(dir), name, engine.ResumeSession)
	if err != nil {
		return err
	}
	defer sess.Close()
	if f.model == "" {
		f.model = sum.Meta["model"]
	}
	f.sess, f.color = sess, useColor(cmd, cmd.ErrOrStderr())
	return execute(cmd.Context(), sum.Workflow, f, nil, cmd.OutOrStdout(), cmd.ErrOrStderr())
}

// sessionDir finds the session folder arg names: a path to one, or a
// name under sessionsDir; "" when it names none.
func sessionDir(sessionsDir, arg string) string {
	if runrecord.IsSession(arg) {
		return arg
	}
	if runrecord.CheckSessionName(arg) != nil {
		return ""
	}
	if dir := filepath.Join(sessionsDirOr(sessionsDir, "."), arg); runrecord.IsSession(dir) {
		return dir
	}
	return ""
}

func newSessionsCmd() *cobra.Command {
	var dir, format string
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List sessions (conversations kept across fsd run --session turns) with their turns and status",
		Long: `List the sessions under --sessions-dir. A session is one run record whose journal
grows turn by turn: fsd run WORKFLOW --session NAME "message" adds a turn. A session
whose last turn was interrupted shows as interrupted: fsd resume NAME goes on with
that turn, fsd sessions abandon NAME gives it up; until then no new turn starts.`,
		Example: `  fsd sessions
  fsd sessions show notes
  fsd sessions rm notes
  fsd sessions prune --older-than 30d`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			return listSessions(cmd.OutOrStdout(), cmd.ErrOrStderr(), sessionsDirOr(dir, "."), format == "json")
		},
	}
	cmd.PersistentFlags().StringVar(&dir, "sessions-dir", "", sessionsDirUsage)
	addFormatFlag(cmd, &format, "text (a table) or json (an array)")
	cmd.AddCommand(newSessionsLsCmd(&dir), newSessionsShowCmd(&dir), newSessionsRmCmd(&dir), newSessionsPruneCmd(&dir), newSessionsAbandonCmd(&dir))
	return cmd
}

func newSessionsLsCmd(dir *string) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:     "ls",
		Short:   "List the sessions (as fsd sessions does)",
		Example: `  fsd sessions ls --format json`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			return listSessions(cmd.OutOrStdout(), cmd.ErrOrStderr(), sessionsDirOr(*dir, "."), format == "json")
		},
	}
	addFormatFlag(cmd, &format, "text (a table) or json (an array)")
	return cmd
}

// sessionRow is one session as fsd sessions lists it.
type sessionRow struct {
	Name     string           `json:"name"`
	Status   runrecord.Status `json:"status"`
	Turns    int              `json:"turns"`
	Started  time.Time        `json:"started,omitzero"`
	Last     time.Time        `json:"last,omitzero"`
	Workflow string           `json:"workflow,omitempty"`
	Loaded   []string         `json:"loaded"`
	Dir      string           `json:"dir"`
	// TurnList is every turn, for fsd sessions show.
	TurnList []runrecord.Turn `json:"turn_list,omitempty"`
}

func loadSession(dir string) (sessionRow, error) {
	row := sessionRow{Name: filepath.Base(dir), Dir: dir, Loaded: []string{}}
	file, err := runrecord.ReadSession(dir)
	if err != nil {
		return row, err
	}
	row.Turns, row.TurnList = len(file.Turns), file.Turns
	if sum, err := runrecord.ReadRun(dir); err == nil {
		row.Status, row.Started, row.Workflow = sum.Status, sum.Started, sum.Workflow
		row.Last = sum.Finished
		// run.json says how the turn's run stopped (interrupted, or
		// waiting for an approval); given up, no call of it waits.
		if sum.Status != runrecord.Finished && sum.Status != runrecord.Failed && lastAbandoned(file) {
			row.Status = runrecord.Status(runrecord.TurnAbandoned)
		}
	} else if errors.Is(err, os.ErrNotExist) {
		row.Status = "new"
	}
	if n := len(file.Turns); n > 0 {
		for _, l := range file.Turns[n-1].Loaded {
			row.Loaded = append(row.Loaded, l.ID+" "+l.Version)
		}
	}
	return row, nil
}

// lastAbandoned reports whether the session's last turn was given up.
func lastAbandoned(file runrecord.Session) bool {
	n := len(file.Turns)
	return n > 0 && file.Turns[n-1].Status == runrecord.TurnAbandoned
}

// listSessions lists the sessions it can read and names the damaged ones
// on stderr, as fsd runs does: one bad session.json hides no other.
func listSessions(w, stderr io.Writer, dir string, asJSON bool) error {
	names, err := runrecord.ListSessions(dir)
	if err != nil {
		return fail(exitProblems, "%v", err)
	}
	rows := []sessionRow{}
	for _, n := range names {
		row, err := loadSession(filepath.Join(dir, n))
		if err != nil {
			fmt.Fprintf(stderr, "fsd: sessions: skipped a damaged session: %v\n", err)
			continue
		}
		row.TurnList = nil
		rows = append(rows, row)
	}
	if asJSON {
		return writeIndentedJSON(w, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(w, "no sessions in %s\n", dir)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTATUS\tTURNS\tSTARTED\tLAST\tWORKFLOW")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", r.Name, r.Status, r.Turns, timeText(r.Started), timeText(r.Last), r.Workflow)
	}
	return tw.Flush()
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func newSessionsShowCmd(dir *string) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a session: its status, its turns and the skills its last turn left loaded (least recently read first)",
		Example: `  fsd sessions show notes
  fsd sessions show notes --format json | jq '.turn_list[].status'`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			d := sessionDir(*dir, args[0])
			if d == "" {
				return usage("no session %s in %s; fsd sessions lists them", args[0], sessionsDirOr(*dir, "."))
			}
			row, err := loadSession(d)
			if err != nil {
				return fail(exitProblems, "%v", err)
			}
			w := cmd.OutOrStdout()
			if format == "json" {
				return writeIndentedJSON(w, row)
			}
			if isTerminal(w) {
				// A turn's message is anyone's text (S9), as fsd show
				// prints it.
				pw := &printableWriter{w: w}
				defer pw.flush()
				w = pw
			}
			fmt.Fprintf(w, "session %s  %s  %s\nworkflow %s\nrecord %s (fsd show %s)\n", row.Name, row.Status, plural(row.Turns, "turn"), row.Workflow, row.Dir, row.Dir)
			if len(row.Loaded) > 0 {
				fmt.Fprintf(w, "loaded (least recently read first): %s\n", joinComma(row.Loaded))
			}
			for i, t := range row.TurnList {
				status := string(t.Status)
				if status == "" {
					status = "open"
				}
				fmt.Fprintf(w, "turn %d  %s  %s  %s\n", i+1, status, timeText(t.Started), clipLine(oneLineText(t.Input), 60))
			}
			return nil
		},
	}
	addFormatFlag(cmd, &format, "text or json")
	return cmd
}

func joinComma(list []string) string { return strings.Join(list, ", ") }

// oneLineText is s with its line breaks and runs of space made one space.
func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

func newSessionsRmCmd(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:     "rm NAME...",
		Short:   "Remove sessions and their records; never one in a turn",
		Example: `  fsd sessions rm notes drafts`,
		Args:    usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, name := range args {
				d := sessionDir(*dir, name)
				if d == "" {
					return usage("no session %s in %s; fsd sessions lists them", name, sessionsDirOr(*dir, "."))
				}
				if err := removeSession(d); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed session %s\n", name)
			}
			return nil
		},
	}
}

// removeSession removes a session's folder once it holds both of its
// locks: a session in a turn is never removed.
func removeSession(dir string) error {
	name := filepath.Base(dir)
	// The session's lock, not the session: opening it reads session.json,
	// and one that is damaged (fsd sessions names it) is removed too. An
	// interrupted turn is given up by removing it all.
	path := filepath.Join(dir, runrecord.SessionLockFile)
	s, err := journal.TryLock(path)
	if errors.Is(err, journal.ErrLocked) {
		pid, _ := os.ReadFile(path)
		return fail(exitProblems, "%v: session %s is in a turn in another fsd (pid %s)", engine.ErrSessionBusy, name, strings.TrimSpace(string(pid)))
	}
	if err != nil {
		return fail(exitProblems, "session %s: %v", name, err)
	}
	defer s.Unlock()
	lock, err := journal.TryLock(dir)
	if err != nil {
		return fail(exitProblems, "session %s: its record is in use: %v", name, err)
	}
	defer lock.Unlock()
	if err := os.RemoveAll(dir); err != nil {
		return fail(exitProblems, "remove session %s: %v", name, err)
	}
	return nil
}

func newSessionsPruneCmd(dir *string) *cobra.Command {
	var olderThan string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "prune --older-than AGE",
		Short: "Remove the sessions whose last turn ended more than AGE ago; never one in a turn",
		Long: `Remove sessions under --sessions-dir whose last turn started more than AGE ago
(7d, 2w, or a Go duration: 36h). A session in a turn is never removed.`,
		Example: `  fsd sessions prune --older-than 30d --dry-run`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan == "" {
				return usage("give --older-than AGE, e.g. --older-than 30d")
			}
			age, err := parseAge(olderThan)
			if err != nil {
				return usage("--older-than %q: %v", olderThan, err)
			}
			d := sessionsDirOr(*dir, ".")
			names, err := runrecord.ListSessions(d)
			if err != nil {
				return fail(exitProblems, "%v", err)
			}
			now := time.Now()
			for _, n := range names {
				row, err := loadSession(filepath.Join(d, n))
				if err != nil {
					continue // a damaged session is never pruned
				}
				last := row.Started
				if k := len(row.TurnList); k > 0 {
					last = row.TurnList[k-1].Started
				}
				if last.IsZero() || now.Sub(last) < age {
					continue
				}
				if dryRun {
					fmt.Fprintf(cmd.OutOrStdout(), "would remove session %s\n", n)
					continue
				}
				if err := removeSession(row.Dir); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "fsd: sessions prune: kept %s: %v\n", n, err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed session %s\n", n)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "remove sessions whose last turn started longer ago than this: 7d, 2w, 36h")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed, remove nothing")
	return cmd
}

func newSessionsAbandonCmd(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "abandon NAME",
		Short: "Give up a session's interrupted last turn, so that a new turn may start",
		Long: `Give up the interrupted last turn of a session instead of resuming it (fsd resume NAME).
The turn stays in the conversation as far as its journal goes; its calls that have no
result read that they were not run; the next turn goes on after it.`,
		Example: `  fsd sessions abandon notes
  fsd run chat.workflow.yaml --session notes "Let's start over."`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			d := sessionDir(*dir, args[0])
			if d == "" {
				return usage("no session %s in %s; fsd sessions lists them", args[0], sessionsDirOr(*dir, "."))
			}
			if err := engine.AbandonTurn(filepath.Dir(d), filepath.Base(d)); err != nil {
				return fail(exitProblems, "%v", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "abandoned the last turn of session %s\n", args[0])
			return nil
		},
	}
}
