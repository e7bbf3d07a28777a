package ui

import (
	"sort"
	"time"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
)

// RunView is what the run page draws, as JSON.
type RunView struct {
	Summary runrecord.Summary `json:"summary"`
	Tasks   []TaskView        `json:"tasks"`
	Gens    []GenView         `json:"gens"`
	// Live: the run may still change (runrecord.Status.Live); its bars
	// end at Now, when the view was built.
	Live bool      `json:"live"`
	Now  time.Time `json:"now"`
	// TasksTotal is how many tasks the run has when Tasks is one page of
	// them, from the From-th (fsd ui's run page); 0 when Tasks is every
	// task (View, fsd report). Gens are then the host's and the page's
	// tasks' generators.
	TasksTotal int `json:"tasks_total,omitempty"`
	From       int `json:"from,omitempty"`
}

// taskWaiting is the status the page gives a task whose call waits for
// approval (not a board status: the board has it running).
const taskWaiting = "waiting"

// TaskView is one board task.
type TaskView struct {
	ID       string    `json:"id"`
	Agent    string    `json:"agent"`
	Goal     string    `json:"goal"`
	Deps     []string  `json:"deps"`
	Status   string    `json:"status"`
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	Result   string    `json:"result,omitempty"`
	Error    string    `json:"error,omitempty"`
	In       int       `json:"in"`
	Out      int       `json:"out"`
	// Progress is the last progress report of the task's call in
	// flight (view.Progress), while the run is live.
	Progress string `json:"progress,omitempty"`
	// Worker names the worker process that ran the task's last attempt
	// ("name (host, pid N)"); "" when the run's own process did.
	Worker string `json:"worker,omitempty"`
}

// GenView is one generator's transcript and calls.
type GenView struct {
	Name  string `json:"name"`
	Task  string `json:"task"`
	Agent string `json:"agent"`
	// Attempt is the task's attempt the generator is, when a retry (2 or
	// more; 0 for a first attempt); Worker the worker process that ran it
	// ("name (host, pid N)"), "" when the run's own process did.
	Attempt int        `json:"attempt,omitempty"`
	Worker  string     `json:"worker,omitempty"`
	Steps   []StepView `json:"steps"`
	Calls   []Span     `json:"calls"` // model and tool calls in time
	In, Out int
}

// StepView is one model call.
type StepView struct {
	Step     int             `json:"step"`
	Tokens   *event.Tokens   `json:"tokens,omitempty"`
	Usage    *model.Usage    `json:"usage,omitempty"`
	Cost     float64         `json:"cost,omitempty"`
	Error    string          `json:"error,omitempty"`
	Context  string          `json:"context"`
	Messages []model.Message `json:"messages"`
	Tools    []model.ToolDef `json:"tools"`
	Response []model.Message `json:"response"`
	// Reconstructed: the task ran on a remote worker; only its transcript
	// is on record (no context block, no tools).
	Reconstructed bool `json:"reconstructed,omitempty"`
}

// Span is a bar on the timeline.
type Span struct {
	Kind  string    `json:"kind"` // model, tool
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`
	Error bool      `json:"error,omitempty"`
}

// View builds the run page's data from a record. Task status comes from
// the events (they are written as things happen, so a running run shows
// its board as it is), completed by board.json.
func View(rec *runrecord.Record, now time.Time) RunView {
	b := newViewBuilder(rec.Summary, now)
	for _, bt := range rec.Tasks {
		b.boardTask(&bt)
	}
	for _, e := range rec.Events {
		b.event(e)
	}
	b.waiting()
	for _, g := range rec.Gens {
		gv := b.gen(g)
		b.addUsage(g.Task, g.Agent, gv.In, gv.Out)
		b.v.Gens = append(b.v.Gens, gv)
	}
	b.v.Tasks = b.tasks()
	return b.v
}

// viewBuilder makes a RunView from a record's board, events and
// generators, each given a piece at a time, so a reader of a large
// record need not hold it whole.
type viewBuilder struct {
	v    RunView
	byID map[string]*TaskView
	// workers holds each task's last end event's workers, when it names
	// any: the worker of each attempt.
	workers map[string]event.Event
	order   []string
}

func newViewBuilder(s runrecord.Summary, now time.Time) *viewBuilder {
	b := &viewBuilder{v: RunView{Summary: s, Live: s.Going(), Now: now}, byID: map[string]*TaskView{}, workers: map[string]event.Event{}}
	b.v.Summary.Seed, b.v.Summary.Seal = "", "" // nothing a page needs
	b.v.Summary.Workflow = s.ShownWorkflow()
	return b
}

func (b *viewBuilder) task(id string) *TaskView {
	t, ok := b.byID[id]
	if !ok {
		t = &TaskView{ID: id, Status: string(board.Pending)}
		b.byID[id] = t
		b.order = append(b.order, id)
	}
	return t
}

// boardTask adds a task of board.json.
func (b *viewBuilder) boardTask(bt *board.Task) {
	t := b.task(bt.ID)
	t.Agent, t.Goal, t.Deps, t.Status = bt.Agent(), bt.Goal, bt.Deps, string(bt.Status)
	t.Started, t.Finished, t.Result, t.Error = bt.Started, bt.Finished, bt.Result, bt.Error
}

// event applies an event, in the record's order, after the board.
func (b *viewBuilder) event(e event.Event) {
	if e.Task == "" {
		return
	}
	var t *TaskView
	switch e.Type {
	case event.TaskAdded, event.TaskStarted, event.TaskCompleted, event.TaskFailed, event.TaskCancelled:
		t = b.task(e.Task)
	case event.ToolProgress, event.ToolResult:
		t = b.byID[e.Task]
	}
	if t == nil {
		return // another kind of event, or a task with no row
	}
	switch e.Type {
	case event.TaskAdded:
		t.Agent, t.Goal, t.Deps = e.Agent, e.Goal, e.Deps
	case event.TaskStarted:
		t.Status, t.Started, t.Finished = string(board.Running), e.Time, time.Time{}
	case event.ToolProgress, event.ToolResult:
		t.Progress = ""
		if b.v.Live && e.Type == event.ToolProgress {
			t.Progress = e.ProgressText()
		}
	case event.TaskCompleted, event.TaskFailed, event.TaskCancelled:
		t.Progress = ""
		t.Status, t.Finished = string(map[string]board.Status{event.TaskCompleted: board.Completed, event.TaskFailed: board.Failed, event.TaskCancelled: board.Cancelled}[e.Type]), e.Time
		if e.Err != "" {
			t.Error = e.Err
		}
		t.Worker = ""
		if e.Worker != nil {
			t.Worker = e.Worker.String()
		}
		if e.Worker != nil || len(e.Attempts) > 0 {
			b.workers[e.Task] = event.Event{Worker: e.Worker, Attempts: e.Attempts}
		} else {
			delete(b.workers, e.Task)
		}
	}
}

// waiting marks the tasks whose call waits for a person, as the live
// board does; the call itself is listed from run.json (Summary.Pending).
func (b *viewBuilder) waiting() {
	for _, p := range b.v.Summary.Pending {
		if t := b.byID[p.Task]; t != nil && b.v.Live && (t.Status == string(board.Running) || t.Status == string(board.Pending)) {
			t.Status = taskWaiting
		}
	}
}

// gen is one generator's view.
func (b *viewBuilder) gen(g *runrecord.Gen) GenView {
	gv := GenView{Name: g.Name, Task: g.Task, Agent: g.Agent}
	if g.Attempt > 1 {
		gv.Attempt = g.Attempt
	}
	// O10: each attempt's transcript names the worker that ran it.
	if e, ok := b.workers[g.Task]; ok && g.Task != "" {
		if w := e.WorkerOf(g.Attempt); w != nil {
			gv.Worker = w.String()
		}
	}
	for _, st := range g.Steps {
		sv := StepView{Step: st.Step + 1, Tokens: st.Tokens, Usage: st.Usage, Cost: st.Cost, Error: st.Error,
			Context: st.Request.Context, Messages: st.Request.Messages, Tools: st.Request.Tools, Response: st.Response,
			Reconstructed: st.Reconstructed}
		gv.Steps = append(gv.Steps, sv)
		gv.Calls = append(gv.Calls, Span{Kind: "model", Name: "model call", Start: st.Sent, End: st.Done, Error: st.Error != ""})
		if st.Usage != nil {
			gv.In += st.Usage.InputTokens
			gv.Out += st.Usage.OutputTokens
		}
	}
	gv.Calls = append(gv.Calls, toolSpans(g)...)
	sort.SliceStable(gv.Calls, func(i, j int) bool { return gv.Calls[i].Start.Before(gv.Calls[j].Start) })
	return gv
}

// addUsage adds a generator's tokens to its task, and its agent when the
// task has none.
func (b *viewBuilder) addUsage(task, agent string, in, out int) {
	if t := b.byID[task]; t != nil && task != "" {
		t.In += in
		t.Out += out
		if t.Agent == "" {
			t.Agent = agent
		}
	}
}

// tasks are the tasks in the order first seen: the board's, then the
// events'.
func (b *viewBuilder) tasks() []TaskView {
	var out []TaskView
	for _, id := range b.order {
		if t := b.byID[id]; t != nil {
			out = append(out, *t)
		}
	}
	return out
}

// toolSpans times each tool call from the transcript's entries.
func toolSpans(g *runrecord.Gen) []Span {
	var out []Span
	var prev time.Time
	for _, e := range g.Entries {
		m := e.Message
		if m == nil {
			continue
		}
		// Calls run one after another in the order made: each starts when
		// the entry before its result (the call, or the previous result)
		// was written.
		if m.Role == model.Tool {
			out = append(out, Span{Kind: "tool", Name: m.Name, Start: prev, End: e.Time, Error: m.IsError})
		}
		prev = e.Time
	}
	return out
}
