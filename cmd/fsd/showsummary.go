package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/view"
)

// runDetail is one run with its board's tasks and what each task's model
// calls used (from its end event: the same figures the run's add up).
type runDetail struct {
	runRow
	Tasks     []board.Task         `json:"tasks"`
	TaskUsage map[string]taskUsage `json:"task_usage,omitempty"`
	// TaskWorkers names the worker process that ran each task's last
	// attempt, for tasks run by fsd worker (fsd run --nats).
	TaskWorkers map[string]*event.Worker `json:"task_workers,omitempty"`
	// TaskAttempts lists the attempts of each task retried on workers,
	// with the worker and error of each.
	TaskAttempts map[string][]event.Attempt `json:"task_attempts,omitempty"`
	// Granted are the calls that ran without asking because a loaded
	// skill's allowed-tools lists them.
	Granted []runrecord.ApprovalLine `json:"granted,omitempty"`
}

type taskUsage struct {
	model.Usage
	Cost float64 `json:"cost,omitempty"`
}

// taskEnds reads each task's figures, worker and attempts from its last
// end event.
func taskEnds(dir string) (map[string]taskUsage, map[string]*event.Worker, map[string][]event.Attempt) {
	f, err := os.Open(filepath.Join(dir, runrecord.EventsFile))
	if err != nil {
		return nil, nil, nil
	}
	defer f.Close()
	out, workers, attempts := map[string]taskUsage{}, map[string]*event.Worker{}, map[string][]event.Attempt{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		// Only end events are decoded: a run's events are mostly other
		// kinds, and most task events (added, started) are not an end.
		if !isTaskEnd(sc.Bytes()) {
			continue
		}
		var e event.Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch e.Type {
		case event.TaskCompleted, event.TaskFailed, event.TaskCancelled:
			if e.Usage != nil {
				out[e.Task] = taskUsage{Usage: *e.Usage, Cost: e.Cost}
			}
			if e.Worker != nil {
				workers[e.Task] = e.Worker
			} else {
				delete(workers, e.Task)
			}
			if e.Attempts != nil {
				attempts[e.Task] = e.Attempts
			} else {
				delete(attempts, e.Task)
			}
		}
	}
	if len(workers) == 0 {
		workers = nil
	}
	if len(attempts) == 0 {
		attempts = nil
	}
	return out, workers, attempts
}

// taskEnds' markers of an end event, as the record writes its type.
var taskEndTypes = [][]byte{[]byte(`"type":"` + event.TaskCompleted + `"`), []byte(`"type":"` + event.TaskFailed + `"`), []byte(`"type":"` + event.TaskCancelled + `"`)}

func isTaskEnd(line []byte) bool {
	for _, m := range taskEndTypes {
		if bytes.Contains(line, m) {
			return true
		}
	}
	return false
}

func loadRunDetail(dir string, now time.Time) (runDetail, error) {
	row, err := loadRun(dir, now)
	if err != nil {
		return runDetail{}, err
	}
	d := runDetail{runRow: row, Tasks: []board.Task{}}
	d.TaskUsage, d.TaskWorkers, d.TaskAttempts = taskEnds(dir)
	if d.Granted, err = runrecord.ReadGranted(dir); err != nil {
		return runDetail{}, err
	}
	tasks, err := runrecord.ReadBoard(dir)
	if errors.Is(err, os.ErrNotExist) {
		return d, nil // a run that never started a board
	}
	if err != nil {
		return runDetail{}, err
	}
	if tasks != nil {
		d.Tasks = tasks
	}
	return d, nil
}

func printRunDetail(w io.Writer, d runDetail) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s\n", d.ID)
	fmt.Fprintf(tw, "workflow\t%s\n", d.ShownWorkflow())
	status := string(d.Status)
	if d.Resumed > 0 {
		status += fmt.Sprintf(" (resumed %s)", plural(d.Resumed, "time"))
	}
	fmt.Fprintf(tw, "status\t%s\n", status)
	fmt.Fprintf(tw, "started\t%s\n", d.Started.Local().Format("2006-01-02 15:04:05"))
	fmt.Fprintf(tw, "duration\t%s\n", d.durationText())
	fmt.Fprintf(tw, "tokens\t%s\n", strings.TrimPrefix(view.Tokens(d.Usage()), "tokens "))
	if d.Cost > 0 {
		fmt.Fprintf(tw, "cost\t%s\n", view.Cost(d.Cost))
	}
	fmt.Fprintf(tw, "record\t%s\n", d.Dir)
	_ = tw.Flush()
	if d.Input != "" {
		fmt.Fprintf(w, "\ninput\n%s\n", indent(d.Input))
	}
	if len(d.Tasks) > 0 {
		fmt.Fprintf(w, "\ntasks (%d)\n", len(d.Tasks))
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, t := range d.Tasks {
			dur := "-"
			if !t.Started.IsZero() && !t.Finished.IsZero() {
				dur = t.Finished.Sub(t.Started).Round(time.Millisecond).String()
			}
			line := fmt.Sprintf("  %s\t%s\t%s\t%s", t.ID, t.Status, t.Agent(), dur)
			if u, ok := d.TaskUsage[t.ID]; ok {
				line += "\t" + strings.TrimPrefix(view.Tokens(u.Usage), "tokens ")
				if u.Cost > 0 {
					line += " · " + view.Cost(u.Cost)
				}
			}
			if wk := d.TaskWorkers[t.ID]; wk != nil {
				line += "\ton " + wk.String()
			}
			if t.Error != "" {
				line += "\t" + firstLine(t.Error)
			}
			fmt.Fprintln(tw, line)
		}
		_ = tw.Flush()
		for _, t := range d.Tasks {
			if len(t.Output) > 0 {
				// A typed result, as the JSON it is (--format json has it whole).
				fmt.Fprintf(w, "\noutput of %s\n%s\n", t.ID, indent(clipLine(string(t.Output), 400)))
			}
		}
	}
	for _, t := range d.Tasks {
		// O10: a task retried on workers names the worker of each attempt.
		if as := d.TaskAttempts[t.ID]; len(as) > 0 {
			fmt.Fprintf(w, "\nattempts of %s\n", t.ID)
			tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			for _, a := range as {
				on, how := "-", "ran"
				if a.Worker != nil {
					on = "on " + a.Worker.String()
				}
				if a.Err != "" {
					how = firstLine(a.Err)
				}
				fmt.Fprintf(tw, "  %d\t%s\t%s\n", a.N, on, how)
			}
			_ = tw.Flush()
		}
	}
	if len(d.Pending) > 0 {
		// Calls waiting for approval (or left waiting by a stop).
		fmt.Fprintf(w, "\nwaiting for approval (%d)\n", len(d.Pending))
		for _, p := range d.Pending {
			fmt.Fprintf(w, "  %s\n", describePending(p))
		}
		fmt.Fprintf(w, "answer with: fsd approve %s CALL [--edit JSON | --reject REASON]\n", d.ID)
	}
	if len(d.Granted) > 0 {
		// Why nobody was asked about calls that would have asked.
		fmt.Fprintf(w, "\nran without asking (%d)\n", len(d.Granted))
		for _, l := range d.Granted {
			fmt.Fprintf(w, "  %s: %s\n", describePending(l.PendingCall), l.Grant)
		}
	}
	switch {
	case d.Answer != "":
		fmt.Fprintf(w, "\nanswer\n%s\n", indent(d.Answer))
	case d.Error != "":
		fmt.Fprintf(w, "\nerror\n%s\n", indent(d.Error))
	}
	if d.Status == runrecord.Interrupted || d.Status == runrecord.Failed || (d.Status == runrecord.Waiting && !d.Summary.Going()) {
		ref := d.ID
		if !sameDir(filepath.Dir(d.Dir), runsDirOr("", ".")) {
			ref = shellArg(d.Dir)
		}
		fmt.Fprintf(w, "\nresume it with: fsd resume %s\n", ref)
	}
}

// clipLine cuts s to at most n bytes, on a character boundary, marked.
func clipLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// shellArg quotes s for a POSIX shell when it needs it.
func shellArg(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
