package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
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
	if f.task == "" {
		return streamRequests(w, dir, f)
	}
	// One task's calls need only its lines: a large run's record is not
	// read whole for them.
	rec, err := runrecord.OpenTask(dir, f.task, f.task == spec.HostName)
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
		if g.Task != f.task && !(f.task == spec.HostName && g.Task == "") {
			continue
		}
		var worker *event.Worker
		if e, ok := ends[g.Task]; ok && g.Task != "" {
			worker = e.WorkerOf(g.Attempt)
		}
		if sg := newShowGen(g, worker, f.step); len(sg.Steps) > 0 || f.step == 0 {
			gens = append(gens, sg)
		}
	}
	if len(gens) == 0 {
		// The task list needs every generator: the index names them.
		// Each task once, whatever its attempts; the host where it ran.
		var names []string
		if s, err := runrecord.OpenStream(dir); err == nil {
			seen := make(map[string]bool, len(s.Gens))
			for _, g := range s.Gens {
				if name := cmp.Or(g.Task, spec.HostName); !seen[name] {
					seen[name] = true
					names = append(names, name)
				}
			}
			s.Close()
		}
		return fail(exitProblems, "show: run %s has no generator for task %q (tasks: %s)", rec.Summary.ID, f.task, strings.Join(names, ", "))
	}
	if f.format == "json" {
		return writeShowJSON(w, gens)
	}
	calls := 0
	for _, g := range gens {
		calls += len(g.Steps)
	}
	printShowHead(w, rec.Summary, calls)
	for _, g := range gens {
		printShowGen(w, g)
	}
	return nil
}

// streamRequests is showRequests of every generator: it reads and writes
// one generator at a time, so it holds one, not the run.
//
// G5: fsd show --requests writes each generator before it reads the next.
func streamRequests(w io.Writer, dir string, f showFlags) error {
	s, err := runrecord.OpenStream(dir)
	if err != nil {
		return fail(exitProblems, "show: %v", err)
	}
	defer s.Close()
	_, workers, attempts := taskEnds(dir)
	gen := func(i int) (showGen, error) {
		g, err := s.Read(i)
		if err != nil {
			return showGen{}, fail(exitProblems, "show: %v", err)
		}
		var worker *event.Worker
		if g.Task != "" {
			worker = event.Event{Worker: workers[g.Task], Attempts: attempts[g.Task]}.WorkerOf(g.Attempt)
		}
		return newShowGen(g, worker, f.step), nil
	}
	noStep := func() error {
		return fail(exitProblems, "show: no generator of run %s has a step %d", s.Summary.ID, f.step)
	}
	if f.format == "json" {
		// The list is written an element at a time; "[" waits for the
		// first, so a --step no generator has is an error with nothing
		// written.
		n := 0
		for i := range s.Gens {
			sg, err := gen(i)
			if err != nil {
				return err
			}
			if len(sg.Steps) == 0 {
				continue
			}
			b, err := marshalShow(sg)
			if err != nil {
				return err
			}
			sep := ","
			if n == 0 {
				sep = "["
			}
			if _, err := io.WriteString(w, sep); err != nil {
				return err
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
			n++
		}
		if n == 0 && f.step > 0 {
			return noStep()
		}
		if n == 0 {
			return writeShowJSON(w, nil)
		}
		_, err := io.WriteString(w, "]\n")
		return err
	}
	// The heading counts the calls first: from the index, but for a
	// generator whose steps come from its transcript (a task run on a
	// worker), which is read for them, once: what it prints waits in a
	// spool file for its turn, so the run is not held.
	//
	// G11: a worker task's transcript is read once.
	calls := 0
	fromTranscript := func(gi *runrecord.GenInfo) bool { return gi.Requests == 0 && gi.Task != "" }
	sp := &spool{}
	defer sp.close()
	for i := range s.Gens {
		if gi := &s.Gens[i]; !fromTranscript(gi) {
			calls += gi.StepCount(f.step)
			continue
		}
		sg, err := gen(i)
		if err != nil {
			return err
		}
		calls += len(sg.Steps)
		if err := sp.add(sg); err != nil {
			return fail(exitInternal, "show: %v", err)
		}
	}
	if calls == 0 && f.step > 0 {
		return noStep()
	}
	printShowHead(w, s.Summary, calls)
	for i := range s.Gens {
		if fromTranscript(&s.Gens[i]) {
			if err := sp.next(w); err != nil {
				return fail(exitInternal, "show: %v", err)
			}
			continue
		}
		sg, err := gen(i)
		if err != nil {
			return err
		}
		if len(sg.Steps) > 0 {
			printShowGen(w, sg)
		}
	}
	return nil
}

// spool keeps the text of generators printed ahead of their turn in a
// temporary file, each read back once, in order.
type spool struct {
	f     *os.File
	w     *bufio.Writer
	r     *bufio.Reader
	sizes []int64
}

// add prints g to the spool (nothing when it has no step).
func (s *spool) add(g showGen) error {
	if len(g.Steps) == 0 {
		s.sizes = append(s.sizes, 0)
		return nil
	}
	if s.f == nil {
		f, err := os.CreateTemp("", "fsd-show-*")
		if err != nil {
			return err
		}
		s.f, s.w = f, bufio.NewWriter(f)
	}
	c := &countWriter{w: s.w}
	printShowGen(c, g)
	s.sizes = append(s.sizes, c.n)
	return nil
}

// next copies the next generator's text to w.
func (s *spool) next(w io.Writer) error {
	n := s.sizes[0]
	s.sizes = s.sizes[1:]
	if n == 0 {
		return nil
	}
	if s.r == nil {
		if err := s.w.Flush(); err != nil {
			return err
		}
		if _, err := s.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		s.r = bufio.NewReader(s.f)
	}
	_, err := io.CopyN(w, s.r, n)
	return err
}

func (s *spool) close() {
	if s.f != nil {
		s.f.Close()
		os.Remove(s.f.Name())
	}
}

// countWriter counts what it writes.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// newShowGen is g as shown, its steps only step n's when n > 0.
func newShowGen(g *runrecord.Gen, worker *event.Worker, n int) showGen {
	sg := showGen{Gen: g.Name, Task: g.Task, Agent: g.Agent, Attempt: g.Attempt, Worker: worker}
	for _, st := range g.Steps {
		if n > 0 && st.Step+1 != n {
			continue
		}
		r := st.Request
		sg.Steps = append(sg.Steps, showStep{Step: st.Step + 1, Sent: st.Sent, Done: st.Done, Tokens: st.Tokens,
			Usage: st.Usage, Cost: st.Cost, Error: st.Error, Response: st.Response, Reconstructed: st.Reconstructed,
			Request: showRequest{Context: r.Context, Messages: r.Messages, Tools: r.Tools}})
	}
	return sg
}

// writeShowJSON writes gens as one JSON list. Not indented: indenting
// would re-indent tool arguments, and the point is to print them as sent
// (pipe to jq to read).
func writeShowJSON(w io.Writer, gens []showGen) error {
	if gens == nil {
		gens = []showGen{}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(gens)
}

// marshalShow is one generator as writeShowJSON writes it in its list.
func marshalShow(g showGen) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(g); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// printShowHead prints the run's line of fsd show --requests: calls is
// how many model calls follow.
func printShowHead(w io.Writer, s runrecord.Summary, calls int) {
	cost := ""
	if s.Cost > 0 {
		cost = " · cost " + view.Cost(s.Cost)
	}
	fmt.Fprintf(w, "run %s · %s · %s · %s · %s%s\n", s.ID, s.Status, s.ShownWorkflow(), plural(calls, "model call"), view.Tokens(s.Usage()), cost)
	if s.Error != "" {
		fmt.Fprintf(w, "error: %s\n", s.Error)
	}
}

// printShowGen prints one generator's calls.
func printShowGen(w io.Writer, g showGen) {
	who := spec.HostName
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
