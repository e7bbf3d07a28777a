package event

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsdrun/fsd/model"
)

// The event types (docs/design.md, Files: events).
const (
	RunStarted = "run.started"
	Request    = "request"
	Text       = "text"
	// TextReset voids the text deltas streamed so far for the current
	// model call of its generator: the call was retried, and the retry's
	// deltas follow.
	TextReset  = "text.reset"
	ToolCall   = "tool.call"
	ToolResult = "tool.result"
	// ToolProgress: a call in flight reported how far it got (an MCP
	// server's progress notification): Tool, CallID, Progress, and Text
	// the server's message.
	ToolProgress  = "tool.progress"
	SkillLoaded   = "skill.loaded"
	SkillUnloaded = "skill.unloaded"
	SkillSkipped  = "skill.skipped"
	TaskAdded     = "task.added"
	TaskStarted   = "task.started"
	TaskCompleted = "task.completed"
	TaskFailed    = "task.failed"
	TaskCancelled = "task.cancelled"
	BoardFinished = "board.finished"
	// ApprovalRequested: a call waits for a person's approval (Approval
	// names it, Tool and Args say what it would do).
	ApprovalRequested = "approval.requested"
	// ApprovalAnswered: the run acts on an answer (Status approved,
	// edited or rejected; Args the edited arguments; Reason; By).
	ApprovalAnswered = "approval.answered"
	// ApprovalGranted: a call that would ask runs without asking because
	// a loaded skill's allowed-tools lists it (Skill, and Reason the entry
	// that matched).
	ApprovalGranted = "approval.granted"
	RunFinished     = "run.finished"
)

// Tokens is the o200k_base count of one request, by part. Request events
// carry it only when their usage is an estimate (the model reported
// none): it is what the estimate's input tokens were counted from.
type Tokens struct {
	Context int `json:"context"`
	Window  int `json:"window"`
	Tools   int `json:"tools"`
	Total   int `json:"total"`
}

// Progress is how far a call in flight got: Done of Total (0: unknown).
type Progress struct {
	Done  float64 `json:"done"`
	Total float64 `json:"total,omitempty"`
}

// ProgressText renders a tool.progress event in one line, the way every
// view of fsd says it: "TOOL 3/5 (60%): MESSAGE", or "TOOL 3" when the
// total is unknown.
func (e Event) ProgressText() string {
	s := e.Tool
	if p := e.Progress; p != nil {
		s += " " + strconv.FormatFloat(p.Done, 'f', -1, 64)
		if p.Total > 0 {
			s += fmt.Sprintf("/%s (%d%%)", strconv.FormatFloat(p.Total, 'f', -1, 64), int(100*p.Done/p.Total))
		}
	}
	if msg := strings.Join(strings.Fields(e.Text), " "); msg != "" {
		if r := []rune(msg); len(r) > 120 {
			msg = string(r[:119]) + "…"
		}
		s += ": " + msg
	}
	return s
}

// Event is one thing that happened in a run. Fields that do not apply to a
// type are left empty and omitted from JSON.
type Event struct {
	Type  string    `json:"type"`
	Time  time.Time `json:"time"`
	Run   string    `json:"run"`
	Task  string    `json:"task,omitempty"`
	Agent string    `json:"agent,omitempty"`

	Text   string          `json:"text,omitempty"`
	Delta  bool            `json:"delta,omitempty"`
	Tool   string          `json:"tool,omitempty"`
	CallID string          `json:"call_id,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
	Result string          `json:"result,omitempty"`
	// Output is a task.completed's typed result, as JSON (Result is then
	// empty).
	Output   json.RawMessage `json:"output,omitempty"`
	Error    bool            `json:"error,omitempty"`
	Skill    string          `json:"skill,omitempty"`
	Version  string          `json:"version,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	At       string          `json:"at,omitempty"` // file:line:col, of skill.skipped
	Tokens   *Tokens         `json:"tokens,omitempty"`
	Messages int             `json:"messages,omitempty"`
	// Usage is the tokens of a request (as the provider reported them,
	// or estimated, marked so), of a task (task.completed, task.failed,
	// task.cancelled: all its model calls), or of the run so far
	// (run.started of a resumed run, run.finished).
	Usage *model.Usage `json:"usage,omitempty"`
	// Cost prices Usage with the workflow's prices (0: no price known).
	Cost    float64  `json:"cost,omitempty"`
	Status  string   `json:"status,omitempty"`
	Goal    string   `json:"goal,omitempty"`
	Deps    []string `json:"deps,omitempty"`
	Answer  string   `json:"answer,omitempty"`
	Err     string   `json:"err,omitempty"`
	Elapsed float64  `json:"elapsed_ms,omitempty"`
	// Approval is the id of a call waiting for approval (its
	// FSD_CALL_ID, what fsd approve takes); By says who answered it.
	Approval string `json:"approval,omitempty"`
	By       string `json:"by,omitempty"`
	// Progress is a tool.progress's figures.
	Progress *Progress `json:"progress,omitempty"`
	// Replayed marks an event a resumed run emits again for work its
	// journal already holds (a replayed step, a task restated).
	Replayed bool `json:"replayed,omitempty"`
	// Worker names the worker process that ran the task's last attempt
	// (task.completed, task.failed, task.cancelled), when one elsewhere
	// did (fsd run --nats); nil when the run's own process did.
	Worker *Worker `json:"worker,omitempty"`
	// Attempts are the task's attempts in order, each with the worker
	// process that ran it and its error, on a task's end event when more
	// than one ran and a worker elsewhere ran one of them.
	Attempts []Attempt `json:"attempts,omitempty"`
}

// WorkerOf is the worker process that ran attempt n of the task whose end
// event e is: from its list of attempts, or, when it lists none (one
// attempt), its worker; nil for an attempt the run's own process ran.
func (e Event) WorkerOf(n int) *Worker {
	if len(e.Attempts) == 0 {
		return e.Worker
	}
	for _, a := range e.Attempts {
		if a.N == n {
			return a.Worker
		}
	}
	return nil
}

// Attempt is one attempt of a task: its number (1 for the first), the
// worker process that ran it (nil: the run's own process, or no worker
// answered) and its error ("" for the one that completed).
type Attempt struct {
	N      int     `json:"attempt"`
	Worker *Worker `json:"worker,omitempty"`
	Err    string  `json:"error,omitempty"`
}

// Worker is a worker process: its name (fsd worker --name, by default
// host-pid), its host and its process id.
type Worker struct {
	Name string `json:"name"`
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
}

// String is "name (host, pid N)", what a person reads.
func (w *Worker) String() string {
	var at []string
	if w.Host != "" {
		at = append(at, w.Host)
	}
	if w.PID > 0 {
		at = append(at, "pid "+strconv.Itoa(w.PID))
	}
	if len(at) == 0 {
		return w.Name
	}
	return w.Name + " (" + strings.Join(at, ", ") + ")"
}

// Sink receives events. Implementations must be safe for concurrent use.
type Sink interface {
	Emit(Event)
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(Event)

// Emit calls f.
func (f SinkFunc) Emit(e Event) { f(e) }

// Multi fans one event out to several sinks, in order.
type Multi []Sink

// Emit sends e to every sink.
func (m Multi) Emit(e Event) {
	for _, s := range m {
		if s != nil {
			s.Emit(e)
		}
	}
}

// Recorder keeps every event in memory; tests read it.
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

// Emit appends e.
func (r *Recorder) Emit(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Events returns a copy of what was recorded.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}
