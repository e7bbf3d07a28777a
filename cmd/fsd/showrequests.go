package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/tokens"
	"github.com/fsdrun/fsd/view"
)

// showGen is one generator in `fsd show --requests --format json`.
type showGen struct {
	Gen     string `json:"gen"`
	Task    string `json:"task,omitempty"`
	Agent   string `json:"agent,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// Worker is the worker process that ran the attempt; nil when the
	// run's own process did.
	Worker *event.Worker `json:"worker,omitempty"`
	Steps  []showStep    `json:"steps"`
}

type showStep struct {
	Step     int             `json:"step"` // 1-based, as printed
	Sent     time.Time       `json:"sent"`
	Done     time.Time       `json:"done,omitzero"`
	Tokens   *event.Tokens   `json:"tokens,omitempty"`
	Usage    *model.Usage    `json:"usage,omitempty"`
	Cost     float64         `json:"cost,omitempty"`
	Error    string          `json:"error,omitempty"`
	Request  showRequest     `json:"request"`
	Response []model.Message `json:"response"`
	// Reconstructed: the task ran on a remote worker; the request is the
	// transcript's messages before the step (no context, no tools).
	Reconstructed bool `json:"reconstructed,omitempty"`
}

// showRequest is a request as sent: no caller, no callback.
type showRequest struct {
	Context  string          `json:"context"`
	Messages []model.Message `json:"messages"`
	Tools    []model.ToolDef `json:"tools"`
}

// showRequests prints every model request of the run in dir as sent,
// those of f.task and f.step only when they are given.
func showRequests(w io.Writer, dir string, f showFlags) error {
	// One task's calls need only its lines: a large run's record is not
	// read whole for them.
	open := runrecord.Open
	if f.task != "" {
		open = func(dir string) (*runrecord.Record, error) {
			return runrecord.OpenTask(dir, f.task, f.task == "host")
		}
	}
	rec, err := open(dir)
	if err != nil {
		return fail(exitProblems, "show: %v", err)
	}
	ends := map[string]event.Event{}
	for _, e := range rec.Events {
		switch e.Type {
		case event.TaskCompleted, event.TaskFailed, event.TaskCancelled:
			ends[e.Task] = e
		}
	}
	var gens []showGen
	for _, g := range rec.Gens {
		if f.task != "" && g.Task != f.task && !(f.task == "host" && g.Task == "") {
			continue
		}
		sg := showGen{Gen: g.Name, Task: g.Task, Agent: g.Agent, Attempt: g.Attempt}
		if e, ok := ends[g.Task]; ok && g.Task != "" {
			sg.Worker = e.WorkerOf(g.Attempt)
		}
		for _, st := range g.Steps {
			if f.step > 0 && st.Step+1 != f.step {
				continue
			}
			r := st.Request
			sg.Steps = append(sg.Steps, showStep{Step: st.Step + 1, Sent: st.Sent, Done: st.Done, Tokens: st.Tokens,
				Usage: st.Usage, Cost: st.Cost, Error: st.Error, Response: st.Response, Reconstructed: st.Reconstructed,
				Request: showRequest{Context: r.Context, Messages: r.Messages, Tools: r.Tools}})
		}
		if len(sg.Steps) > 0 || (f.step == 0 && f.task != "") {
			gens = append(gens, sg)
		}
	}
	if len(gens) == 0 {
		switch {
		case f.task != "":
			// The task list needs every generator: read the whole record.
			if all, err := runrecord.Open(dir); err == nil {
				rec = all
			}
			return fail(exitProblems, "show: run %s has no generator for task %q (tasks: %s)", rec.Summary.ID, f.task, taskList(rec))
		case f.step > 0:
			return fail(exitProblems, "show: no generator of run %s has a step %d", rec.Summary.ID, f.step)
		}
	}
	if f.format == "json" {
		// Not indented: indenting would re-indent tool arguments, and the
		// point is to print them as sent (pipe to jq to read).
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		if gens == nil {
			gens = []showGen{}
		}
		return enc.Encode(gens)
	}
	return printShow(w, rec, gens)
}

func taskList(rec *runrecord.Record) string {
	names := []string{"host"}
	for _, g := range rec.Gens {
		if g.Task != "" {
			names = append(names, g.Task)
		}
	}
	return strings.Join(names, ", ")
}

func printShow(w io.Writer, rec *runrecord.Record, gens []showGen) error {
	s := rec.Summary
	calls := 0
	for _, g := range gens {
		calls += len(g.Steps)
	}
	cost := ""
	if s.Cost > 0 {
		cost = " · cost " + view.Cost(s.Cost)
	}
	fmt.Fprintf(w, "run %s · %s · %s · %s · %s%s\n", s.ID, s.Status, s.ShownWorkflow(), plural(calls, "model call"), view.Tokens(s.Usage()), cost)
	if s.Error != "" {
		fmt.Fprintf(w, "error: %s\n", s.Error)
	}
	for _, g := range gens {
		who := "host"
		if g.Task != "" {
			who = "task " + g.Task
			if g.Agent != "" {
				who += " · " + g.Agent
			}
			if g.Attempt > 1 {
				who += fmt.Sprintf(" · attempt %d", g.Attempt)
			}
			if g.Worker != nil {
				who += " · on " + g.Worker.String()
			}
		}
		fmt.Fprintf(w, "\n##### %s · %s · %s\n", who, g.Gen, plural(len(g.Steps), "step"))
		if len(g.Steps) == 0 {
			fmt.Fprintf(w, "(no model call on record)\n")
		}
		for _, st := range g.Steps {
			printStep(w, st)
		}
	}
	return nil
}

func printStep(w io.Writer, st showStep) {
	r := st.Request
	ctxN := tokens.Count(r.Context)
	fmt.Fprintf(w, "\n=== step %d · request", st.Step)
	if t := st.Tokens; t != nil {
		fmt.Fprintf(w, " · context %d + messages %d + tools %d = %d tokens", t.Context, t.Window, t.Tools, t.Total)
	}
	if st.Reconstructed {
		// Assembled on a remote worker: only its transcript is on record.
		fmt.Fprintf(w, " · ran on a worker: the request is not on record; the transcript before it\n--- messages: %d\n", len(r.Messages))
		for _, m := range r.Messages {
			printMessage(w, m)
		}
		fmt.Fprintf(w, "=== step %d · response\n", st.Step)
		for _, m := range st.Response {
			printMessage(w, m)
		}
		return
	}
	fmt.Fprintf(w, "\n--- context (%d tokens)\n%s\n", ctxN, strings.TrimRight(r.Context, "\n"))
	fmt.Fprintf(w, "--- messages: %d\n", len(r.Messages))
	for _, m := range r.Messages {
		printMessage(w, m)
	}
	fmt.Fprintf(w, "--- tools: %d\n", len(r.Tools))
	for _, t := range r.Tools {
		n := tokens.Count(t.Name) + tokens.Count(t.Description) + tokens.Count(string(t.Parameters))
		fmt.Fprintf(w, "- %s (%d tokens): %s\n  parameters: %s\n", t.Name, n, t.Description, t.Parameters)
	}
	fmt.Fprintf(w, "=== step %d · response", st.Step)
	switch {
	case st.Error != "":
		fmt.Fprintf(w, " · error: %s", st.Error)
	case st.Usage != nil:
		fmt.Fprintf(w, " · %s", view.Tokens(*st.Usage))
		if st.Cost > 0 {
			fmt.Fprintf(w, " · cost %s", view.Cost(st.Cost))
		}
	case st.Done.IsZero():
		fmt.Fprintf(w, " · no answer on record (in flight, or the process stopped)")
	}
	if len(st.Response) > 0 && st.Response[0].Model != "" {
		// Another model than the manifests name answered: a fallback
		// chain's, or --model's. A chain's switch shows as the step
		// where the name changes.
		fmt.Fprintf(w, " · answered by %s", st.Response[0].Model)
	}
	fmt.Fprintln(w)
	for _, m := range st.Response {
		printMessage(w, m)
	}
}

// printMessage prints one message whole: its text, each call with its
// arguments, a result with its call id and error mark.
func printMessage(w io.Writer, m model.Message) {
	head := string(m.Role)
	if m.Role == model.Tool {
		head += " " + m.Name + " [" + m.CallID + "]"
		if m.IsError {
			head += " error"
		}
	}
	fmt.Fprintf(w, "[%s]\n", head)
	if m.Text != "" {
		fmt.Fprintf(w, "%s\n", strings.TrimRight(m.Text, "\n"))
	}
	for _, c := range m.Calls {
		fmt.Fprintf(w, "→ %s %s [%s]\n", c.Name, c.Args, c.ID)
	}
}
