package board

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/spec"
)

// Status is where a task is in its life.
type Status string

// The task statuses of D3.
const (
	Pending   Status = "pending"
	Running   Status = "running"
	Completed Status = "completed"
	Failed    Status = "failed"
	Cancelled Status = "cancelled"
)

// DefaultWorker is the agent name shown for a task with no assignee: it
// runs on the default worker (a plain generator, D1). A workflow names it
// so too (limits.agents), hence spec's name.
const DefaultWorker = spec.DefaultWorkerName

// Defaults of Options: a workflow's limits.concurrency,
// max-pending-tasks and max-total-tasks when absent.
const (
	DefaultConcurrency = spec.DefaultConcurrency
	DefaultMaxPending  = spec.DefaultMaxPendingTasks
	DefaultMaxTotal    = spec.DefaultMaxTotalTasks
)

// TaskSpec is a task as asked for: by a generator's addTask call or by a
// workflow's static `tasks:`.
type TaskSpec struct {
	// ID is optional; the board assigns t1, t2, … in the order added.
	ID   string `json:"id,omitempty"`
	Goal string `json:"goal"`
	// Assignee is "" for the default worker, else a name the roster holds
	// (an agent name, or skill/agent for static workflow tasks).
	Assignee string   `json:"assignee,omitempty"`
	Deps     []string `json:"deps,omitempty"`
	Input    string   `json:"input,omitempty"`
}

// Task is a snapshot of one task. The board hands out copies; Deps is
// shared and must not be modified.
type Task struct {
	ID       string   `json:"id"`
	Goal     string   `json:"goal"`
	Input    string   `json:"input,omitempty"`
	Assignee string   `json:"assignee,omitempty"`
	Deps     []string `json:"deps,omitempty"`
	Status   Status   `json:"status"`
	Result   string   `json:"result,omitempty"`
	// Output is a typed result: the JSON value the task's agent answered,
	// valid against its output schema. Result then holds the same JSON as
	// text (so whatever reads results as text reads it), and JSON
	// encodings carry it once, as output. A runner sets it on the task it
	// is given.
	Output   json.RawMessage `json:"output,omitempty"`
	Error    string          `json:"error,omitempty"`
	Attempts int             `json:"attempts,omitempty"`
	Started  time.Time       `json:"started,omitzero"`
	Finished time.Time       `json:"finished,omitzero"`
}

// taskJSON is Task's JSON form.
type taskJSON Task

// MarshalJSON writes a typed result once, as output.
func (t Task) MarshalJSON() ([]byte, error) {
	if len(t.Output) > 0 {
		t.Result = ""
	}
	return json.Marshal(taskJSON(t))
}

// UnmarshalJSON reads a typed result's text back from its output.
func (t *Task) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*taskJSON)(t)); err != nil {
		return err
	}
	if len(t.Output) > 0 {
		// Compact, as the runner answered it (a record may be indented).
		var b bytes.Buffer
		if err := json.Compact(&b, t.Output); err != nil {
			return err
		}
		t.Output = b.Bytes()
		if t.Result == "" {
			t.Result = string(t.Output)
		}
	}
	return nil
}

// Agent is the task's assignee, or DefaultWorker when it has none.
func (t *Task) Agent() string {
	if t.Assignee == "" {
		return DefaultWorker
	}
	return t.Assignee
}

// DepResult is one completed dependency's result, handed to its
// dependents (D3).
type DepResult struct {
	TaskID string `json:"task"`
	Agent  string `json:"agent"`
	Result string `json:"result"`
	// Output is the dependency's typed result (see Task.Output), nil for
	// a text result.
	Output json.RawMessage `json:"output,omitempty"`
}

// Options configure a board. Zero values mean the defaults.
type Options struct {
	// Concurrency bounds the tasks running at once (default 4).
	Concurrency int
	// MaxPending bounds the tasks waiting to run (default 100); MaxTotal
	// bounds the tasks added over the board's life (default 500). A
	// negative value means no bound.
	MaxPending int
	MaxTotal   int
	// Roster lists the valid assignees, asked at every Add because loading
	// a skill changes the team. Nil accepts any assignee.
	Roster func() []string
	// Policy gives an assignee's per-task timeout (0: none) and retries.
	Policy func(assignee string) (timeout time.Duration, retries int)
	// Backoff is the wait before retry number attempt (1-based). Nil means
	// 200ms doubling per attempt, at most 10s.
	Backoff func(attempt int) time.Duration
	// Sink receives task.* and board.finished events; nil drops them.
	Sink event.Sink
	// Run is the run id every event is tagged with.
	Run string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// node is a task and its scheduling state. Every field is guarded by
// Board.mu.
type node struct {
	t Task
	// waiting counts dependencies not yet completed; the task is ready when
	// it reaches zero. Together with dependents it makes scheduling
	// O(tasks + edges): a completion touches only its own dependents.
	waiting    int
	deps       []*node
	dependents []*node
	cancel     context.CancelCauseFunc // set while running
	pos        int                     // index in Board.order
}

// Board is a private task board. It is safe for concurrent use.
type Board struct {
	opts Options

	mu      sync.Mutex
	order   []*node
	byID    map[string]*node
	seq     int // default ids handed out so far
	pending int

	// Run state.
	running  bool
	ready    []*node
	inflight int
	wake     chan struct{}
}

// New returns an empty board.
func New(opts Options) *Board {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.MaxPending == 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.MaxTotal == 0 {
		opts.MaxTotal = DefaultMaxTotal
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Backoff == nil {
		opts.Backoff = defaultBackoff
	}
	return &Board{opts: opts, byID: map[string]*node{}, wake: make(chan struct{}, 1)}
}

func defaultBackoff(attempt int) time.Duration {
	d := 200 * time.Millisecond
	for i := 1; i < attempt && d < 10*time.Second; i++ {
		d *= 2
	}
	return min(d, 10*time.Second)
}

// Add checks spec and puts it on the board as a pending task. Every
// dependency must already be on the board; use AddAll for a batch whose
// tasks refer to each other in any order.
func (b *Board) Add(spec TaskSpec) (*Task, error) {
	ts, err := b.AddAll([]TaskSpec{spec})
	if err != nil {
		return nil, err
	}
	return ts[0], nil
}

// AddAll checks a batch as a whole — ids, assignees, dependencies (on the
// board or in the batch), cycles, caps — and adds all of it or none of it.
// Static workflow tasks are added this way.
func (b *Board) AddAll(specs []TaskSpec) ([]*Task, error) {
	var roster []string
	if b.opts.Roster != nil {
		roster = b.opts.Roster()
	}
	b.mu.Lock()
	nodes, err := b.check(specs, roster)
	if err != nil {
		b.mu.Unlock()
		return nil, err
	}
	out := make([]*Task, len(nodes))
	copies := make([]Task, len(nodes)) // one allocation for the batch
	for i, n := range nodes {
		n.pos = len(b.order)
		b.order = append(b.order, n)
		b.byID[n.t.ID] = n
		b.pending++
		for _, d := range n.deps {
			d.dependents = append(d.dependents, n)
			if d.t.Status != Completed {
				n.waiting++
			}
		}
		copies[i] = n.t
		out[i] = &copies[i]
	}
	// A task added during a Run whose dependencies are done runs in that
	// Run: runBoard returns only when nothing more can run.
	if b.running {
		for _, n := range nodes {
			if n.waiting == 0 {
				b.ready = append(b.ready, n)
			}
		}
		b.signal()
	}
	b.mu.Unlock()
	for _, t := range out {
		b.emit(event.Event{Type: event.TaskAdded, Task: t.ID, Agent: t.Agent(), Goal: t.Goal, Deps: t.Deps})
	}
	return out, nil
}

// check validates a batch under b.mu and returns its nodes, dependencies
// resolved, without adding them.
func (b *Board) check(specs []TaskSpec, roster []string) ([]*node, error) {
	if b.opts.MaxTotal > 0 && len(b.order)+len(specs) > b.opts.MaxTotal {
		return nil, errf(CodeTotalCap, "", "total task cap exceeded: the board allows %d tasks over the run and has %d", b.opts.MaxTotal, len(b.order))
	}
	if b.opts.MaxPending > 0 && b.pending+len(specs) > b.opts.MaxPending {
		return nil, errf(CodePendingCap, "", "pending task cap exceeded: at most %d tasks may wait to run and %d already do; run the board first", b.opts.MaxPending, b.pending)
	}
	seq := b.seq
	batch := make(map[string]*node, len(specs))
	nodes := make([]*node, len(specs))
	// what names a task in messages: a default id is not handed out
	// until the task is accepted, so a rejected task is named by goal.
	// Made for a message only: a big batch is accepted without them.
	what := func(s TaskSpec) string {
		if s.ID == "" {
			return fmt.Sprintf("new task %q", shorten(s.Goal))
		}
		return fmt.Sprintf("task %q", s.ID)
	}
	for i, s := range specs {
		id := s.ID
		if id == "" {
			for {
				seq++
				id = "t" + strconv.Itoa(seq)
				if b.byID[id] == nil && batch[id] == nil {
					break
				}
			}
		} else if msg := badID(id); msg != "" {
			return nil, errf(CodeInvalidTask, id, "task id %q %s", id, msg)
		}
		if b.byID[id] != nil || batch[id] != nil {
			return nil, errf(CodeDuplicateID, id, "task id %q is already on the board; pick another id", id)
		}
		if s.Goal == "" {
			return nil, errf(CodeInvalidTask, s.ID, "%s has no goal", what(s))
		}
		if s.Assignee != "" && roster != nil && !slices.Contains(roster, s.Assignee) {
			e := errf(CodeUnknownAssignee, s.ID, "%s: unknown assignee %q; the roster is %v (omit assignee for the default worker)", what(s), s.Assignee, roster)
			e.Roster = slices.Clone(roster)
			return nil, e
		}
		deps := dedupe(s.Deps)
		n := &node{t: Task{ID: id, Goal: s.Goal, Input: s.Input, Assignee: s.Assignee, Deps: deps, Status: Pending}}
		batch[id] = n
		nodes[i] = n
	}
	for i, n := range nodes {
		for _, d := range n.t.Deps {
			dn := b.byID[d]
			if dn == nil {
				dn = batch[d]
			}
			if dn == nil {
				return nil, errf(CodeUnknownDependency, specs[i].ID, "%s depends on %q, which is not on the board", what(specs[i]), d)
			}
			n.deps = append(n.deps, dn)
		}
	}
	if cycle := findCycle(nodes, batch); cycle != nil {
		e := errf(CodeDependencyCycle, cycle[0], "%s", cycleMessage(cycle))
		e.Cycle = cycle
		return nil, e
	}
	b.seq = seq
	return nodes, nil
}

// dedupe drops repeated dependencies, keeping the first of each. A join
// over thousands of tasks must not cost a quadratic scan, and a list
// without repeats (the usual one) is kept as it is, not copied.
func dedupe(deps []string) []string {
	if len(deps) <= 16 {
		for i, d := range deps {
			if slices.Contains(deps[:i], d) {
				return dedupeFrom(deps, i)
			}
		}
		return deps
	}
	seen := make(map[string]bool, len(deps))
	for i, d := range deps {
		if seen[d] {
			return dedupeFrom(deps, i)
		}
		seen[d] = true
	}
	return deps
}

// dedupeFrom copies deps without repeats, deps[i] being the first repeat.
func dedupeFrom(deps []string, i int) []string {
	out := slices.Clone(deps[:i])
	seen := make(map[string]bool, len(deps))
	for _, d := range out {
		seen[d] = true
	}
	for _, d := range deps[i:] {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// badID says what is wrong with an explicit task id, or "".
func badID(id string) string {
	if id == spec.HostName {
		return "is reserved for the host; pick another id"
	}
	return spec.TaskIDProblem(id)
}

// findCycle returns a cycle among the batch's nodes (tasks already on the
// board cannot be in one: their dependencies were checked when added),
// starting from its earliest task in batch order, or nil.
func findCycle(nodes []*node, batch map[string]*node) []string {
	const (
		white = iota
		grey
		black
	)
	color := make(map[*node]int, len(nodes))
	var stack []*node
	var cycle []string
	var visit func(n *node) bool
	visit = func(n *node) bool {
		color[n] = grey
		stack = append(stack, n)
		for _, d := range n.deps {
			if batch[d.t.ID] != d {
				continue
			}
			switch color[d] {
			case grey:
				i := slices.Index(stack, d)
				for _, s := range stack[i:] {
					cycle = append(cycle, s.t.ID)
				}
				cycle = append(cycle, d.t.ID)
				return true
			case white:
				if visit(d) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
		return false
	}
	for _, n := range nodes {
		if color[n] == white && visit(n) {
			return rotate(cycle, nodes)
		}
	}
	return nil
}

// rotate starts a cycle (last element repeating the first) at its task
// added earliest, so the message is the same whichever task the search
// started from.
func rotate(cycle []string, nodes []*node) []string {
	body := cycle[:len(cycle)-1]
	pos := make(map[string]int, len(nodes))
	for i, n := range nodes {
		pos[n.t.ID] = i
	}
	best := 0
	for i, id := range body {
		if pos[id] < pos[body[best]] {
			best = i
		}
	}
	// The search follows dependencies, so "a" -> "b" reads "a depends on b".
	out := append(slices.Clone(body[best:]), body[:best]...)
	return append(out, out[0])
}

// Cancel cancels a task: a pending one never runs, a running one has its
// context cancelled, with cause ErrTaskCancelled, and ends as cancelled.
// Its dependents stay pending.
func (b *Board) Cancel(id string) (*Task, error) {
	b.mu.Lock()
	n := b.byID[id]
	if n == nil {
		b.mu.Unlock()
		return nil, b.notFound(id)
	}
	switch n.t.Status {
	case Pending:
		n.t.Status = Cancelled
		n.t.Error = "cancelled before it ran"
		n.t.Finished = b.opts.Now()
		b.pending--
		cp := n.t
		b.mu.Unlock()
		b.emit(event.Event{Type: event.TaskCancelled, Task: cp.ID, Agent: cp.Agent(), Err: cp.Error})
		return &cp, nil
	case Running:
		n.cancel(ErrTaskCancelled)
		cp := n.t
		b.mu.Unlock()
		return &cp, nil
	default:
		cp := n.t
		b.mu.Unlock()
		return &cp, errf(CodeTaskFinished, id, "task %q already %s", id, cp.Status)
	}
}

func (b *Board) notFound(id string) *Error {
	return errf(CodeTaskNotFound, id, "no task %q on the board", id)
}

// Get returns a snapshot of one task.
func (b *Board) Get(id string) (*Task, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.byID[id]
	if n == nil {
		return nil, b.notFound(id)
	}
	cp := n.t
	return &cp, nil
}

// Tasks returns a snapshot of every task, in the order added.
func (b *Board) Tasks() []Task {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Task, len(b.order))
	for i, n := range b.order {
		out[i] = n.t
	}
	return out
}

// Overview counts the tasks by status and returns a snapshot of the first
// n, in the order added: what a status summary needs, at the cost of n
// tasks rather than a copy of a board of thousands.
func (b *Board) Overview(n int) (counts map[Status]int, head []Task) {
	b.mu.Lock()
	defer b.mu.Unlock()
	counts = map[Status]int{}
	for _, t := range b.order {
		counts[t.t.Status]++
	}
	head = make([]Task, min(n, len(b.order)))
	for i := range head {
		head[i] = b.order[i].t
	}
	return counts, head
}

// Ancestors returns the ids of a task's dependencies, transitively, in the
// order added. Flow policy `ancestors` (D7) reads it.
func (b *Board) Ancestors(id string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.byID[id]
	if n == nil {
		return nil
	}
	// Walk only the ancestors, then order them by position: the cost is
	// the ancestry, not the board.
	seen := map[*node]bool{}
	var found []*node
	stack := slices.Clone(n.deps)
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[d] {
			continue
		}
		seen[d] = true
		found = append(found, d)
		stack = append(stack, d.deps...)
	}
	slices.SortFunc(found, func(a, b *node) int { return a.pos - b.pos })
	out := make([]string, len(found))
	for i, d := range found {
		out[i] = d.t.ID
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (b *Board) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *Board) emit(e event.Event) {
	if b.opts.Sink == nil {
		return
	}
	e.Time = b.opts.Now()
	e.Run = b.opts.Run
	b.opts.Sink.Emit(e)
}
