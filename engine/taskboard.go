package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/supply"
	"github.com/fsdrun/fsd/transcript"
	"github.com/fsdrun/fsd/work"
)

// maxStatusLines bounds the board status in the context block; a big
// board is summarised, not listed.
const maxStatusLines = 40

// hostBoard is a generator's private task board (D1) and the glue between
// the board's scheduler and the engine's workers.
type hostBoard struct {
	boardDeps
	host *hostEnv // nil in a pipeline: the parent is only the input
	b    *board.Board
	// parent is the conversation a conversation-supply worker inherits
	// (D5), read at dispatch.
	parent func() []model.Message

	mu sync.Mutex
	// history holds worker items with history visibility, per task, until
	// the runBoard call has its result, so the parent transcript never
	// holds a call without its result next to it (W2) and two workers'
	// items never interleave.
	history map[string][]model.Message
	// seeding is set while the static tasks are added; replayedEnds holds
	// the tasks whose worker ended in journaled steps. Both make task
	// events of a resumed run say "replayed".
	seeding      bool
	replayedEnds map[string]bool
	// static holds the ids of the workflow's static tasks, and
	// staticAssignees their assignees, each once: the roster is asked at
	// every addTask and must not walk a board of 100,000 static tasks.
	static          map[string]bool
	staticAssignees []string
	// ranBy holds each task's attempts in order, with the worker process
	// that ran each: its end event names them.
	ranBy map[string]attempts
}

// attempts are a task's attempts in order. Most tasks have one: it is
// held in the map's own entry, and only later ones in a slice.
type attempts struct {
	first event.Attempt
	later []event.Attempt
	n     int
}

func (as attempts) add(a event.Attempt) attempts {
	if as.n == 0 {
		as.first = a
	} else {
		as.later = append(as.later, a)
	}
	as.n++
	return as
}

func (as attempts) last() event.Attempt {
	if as.n > 1 {
		return as.later[len(as.later)-1]
	}
	return as.first
}

func (as attempts) all() []event.Attempt {
	return append([]event.Attempt{as.first}, as.later...)
}

// ran notes an attempt of a task: the worker process that ran it (nil:
// this one, or none answered) and its error.
func (hb *hostBoard) ran(task string, a event.Attempt) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.ranBy == nil {
		hb.ranBy = map[string]attempts{}
	}
	as := hb.ranBy[task]
	if as.n > 0 && as.last().N >= a.N {
		// The board's attempts count up: a lower number is the task run
		// again from its first attempt.
		as = attempts{}
	}
	hb.ranBy[task] = as.add(a)
}

// ranByOf names the worker on a task's end event, and the worker of each
// attempt when there were several and one ran elsewhere.
//
// O6: a task's end event names the worker process that ran its last
// attempt.
// O10: and the worker of each of its attempts.
func (hb *hostBoard) ranByOf(e event.Event) event.Event {
	switch e.Type {
	case event.TaskCompleted, event.TaskFailed, event.TaskCancelled:
		// The end event is the entry's last reader: a finished task keeps
		// none (G1), and a task run again starts a list of its own.
		hb.mu.Lock()
		as := hb.ranBy[e.Task]
		delete(hb.ranBy, e.Task)
		hb.mu.Unlock()
		if as.n == 0 {
			return e
		}
		e.Worker = as.last().Worker
		if as.n > 1 {
			if all := as.all(); slices.ContainsFunc(all, func(a event.Attempt) bool { return a.Worker != nil }) {
				e.Attempts = all
			}
		}
	}
	return e
}

// restated notes that a task's worker ended in its journal.
//
// R7: a task's end from the journal is restated, replayed.
func (hb *hostBoard) restated(task string) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.replayedEnds == nil {
		hb.replayedEnds = map[string]bool{}
	}
	hb.replayedEnds[task] = true
}

// replayed reports whether a board event of a resumed run restates work
// the journal holds: a task added again (static, or by a replayed host
// step), started again with a journal, or ended by its journal.
func (hb *hostBoard) replayed(e event.Event) bool {
	j := hb.resume
	if j == nil {
		return false
	}
	switch e.Type {
	case event.TaskAdded:
		return hb.seeding || hb.host.replaying()
	case event.TaskStarted:
		return j.gen(transcriptName(e.Task, 1)) != nil
	case event.TaskCompleted, event.TaskFailed:
		hb.mu.Lock()
		defer hb.mu.Unlock()
		return hb.replayedEnds[e.Task]
	}
	return false
}

// boardDeps are what a host board needs from its run: the workflow's
// static tasks, the catalog assignees resolve in, the event stream, the
// journal of a resumed run, where board.json goes, and what its workers
// need.
type boardDeps struct {
	tasks   []spec.Task
	cat     *catalog
	ev      *emitter
	log     zerolog.Logger
	resume  *Replay
	save    func(*board.Board)
	workers workerDeps
	// dispatch delivers the board's task attempts to workers elsewhere;
	// nil runs them in this process (inProcess).
	dispatch work.Dispatcher
}

// workerDeps are what a board worker needs from its run.
type workerDeps struct {
	gen    genDeps
	model  model.Model
	limits spec.Limits // defaulted
	ledger *supply.Ledger
	box    *toolbox
	// builtins are the workflow's tools: (see offeredBuiltins).
	builtins []string
	// skills makes the world of a worker whose agent lists skills:.
	skills func(only []string) *hostEnv
	// transcript opens a task attempt's transcript (and its journal on
	// resume).
	transcript func(task string, attempt int) (*transcript.Transcript, *genReplay, error)
}

// newHostBoard builds a board for the host h (nil: a pipeline's).
func (r *Run) newHostBoard(h *hostEnv) *hostBoard {
	return newBoard(boardDeps{
		tasks: r.wf.Tasks, cat: r.cat, ev: &r.ev, log: r.log, resume: r.journal(), save: r.saveBoard, dispatch: r.opts.Dispatcher,
		workers: workerDeps{gen: r.genDeps(), model: r.opts.Model, limits: r.limits, ledger: r.ledger, box: r.box,
			builtins: r.wf.Tools, skills: r.skillsEnv, transcript: r.newTranscript},
	}, h)
}

func newBoard(d boardDeps, h *hostEnv) *hostBoard {
	hb := &hostBoard{boardDeps: d, host: h, static: make(map[string]bool, len(d.tasks))}
	if hb.dispatch == nil {
		hb.dispatch = &inProcess{workers: d.workers, ev: d.ev, resolve: hb.resolve}
	}
	seen := map[string]bool{}
	for _, t := range d.tasks {
		hb.static[t.ID] = true
		if t.Assignee != "" && !seen[t.Assignee] {
			seen[t.Assignee] = true
			hb.staticAssignees = append(hb.staticAssignees, t.Assignee)
		}
	}
	if h != nil {
		hb.parent = func() []model.Message { return h.tr.Messages() }
	}
	l := d.workers.limits
	hb.b = board.New(board.Options{
		Concurrency: l.Concurrency,
		MaxPending:  l.MaxPendingTasks,
		MaxTotal:    l.MaxTotalTasks,
		Roster:      hb.roster,
		Policy:      hb.policy,
		Sink: event.SinkFunc(func(e event.Event) {
			e.Replayed = hb.replayed(e)
			d.ev.stamped(d.workers.gen.acct.withTaskUsage(hb.ranByOf(e)))
		}),
		Run: d.ev.runID,
		Now: d.ev.now,
	})
	return hb
}

// seed compiles the workflow's static tasks into the board.
func (hb *hostBoard) seed() error {
	if len(hb.tasks) == 0 {
		return nil
	}
	specs := make([]board.TaskSpec, len(hb.tasks))
	for i, t := range hb.tasks {
		specs[i] = board.TaskSpec{ID: t.ID, Goal: t.Goal, Assignee: t.Assignee, Deps: t.Deps, Input: t.Input}
	}
	hb.seeding = true
	_, err := hb.b.AddAll(specs)
	hb.seeding = false
	if err != nil {
		return fmt.Errorf("static tasks: %w", err)
	}
	return nil
}

// active reports whether the board tools are offered: while a loaded skill
// declares agents, or when the workflow declared static tasks.
func (hb *hostBoard) active() bool {
	if len(hb.tasks) > 0 {
		return true
	}
	if hb.host == nil {
		return false
	}
	for _, l := range hb.host.mgr.loaded {
		if len(l.skill.Agents) > 0 {
			return true
		}
	}
	return false
}

func (hb *hostBoard) defs() []model.ToolDef { return boardDefs() }

func (hb *hostBoard) owns(name string) bool { return board.IsTool(name) }

// roster lists valid assignees: every agent of a loaded skill, by bare
// name and as skill/agent, plus the static tasks' skill/agent names.
func (hb *hostBoard) roster() []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	if hb.host != nil {
		for i := len(hb.host.mgr.loaded) - 1; i >= 0; i-- {
			s := hb.host.mgr.loaded[i].skill
			for _, a := range s.Agents {
				add(a.Name)
				add(s.ID + "/" + a.Name)
			}
		}
	}
	for _, a := range hb.staticAssignees {
		add(a)
	}
	return out
}

// resolve finds the skill and agent of an assignee: "skill/agent", or a
// bare agent name of the most recently read loaded skill that has it.
func (hb *hostBoard) resolve(assignee string) (*spec.Skill, *spec.Agent, bool) {
	if assignee == "" {
		return nil, nil, true
	}
	if sid, name, ok := strings.Cut(assignee, "/"); ok {
		s, found := hb.cat.find(sid)
		if !found {
			return nil, nil, false
		}
		a, found := s.Agent(name)
		return s, a, found
	}
	if hb.host != nil {
		for i := len(hb.host.mgr.loaded) - 1; i >= 0; i-- {
			s := hb.host.mgr.loaded[i].skill
			if a, ok := s.Agent(assignee); ok {
				return s, a, true
			}
		}
	}
	return nil, nil, false
}

func (hb *hostBoard) policy(assignee string) (time.Duration, int) {
	if _, a, ok := hb.resolve(assignee); ok && a != nil {
		return a.Timeout, a.Retries
	}
	return 0, 0
}

// call runs a board tool for the host. addTask assignees given as a bare
// agent name are pinned to skill/agent now, so a later eviction or a
// second skill with the same agent name cannot change who runs the task.
func (hb *hostBoard) call(ctx context.Context, c model.ToolCall) model.ToolResult {
	args := c.Args
	if c.Name == board.ToolAddTask {
		args = hb.pinAssignee(args)
	}
	res := hb.b.CallTool(ctx, c.Name, args, hb.runTask)
	if c.Name == board.ToolRunBoard {
		hb.save(hb.b)
	}
	return res
}

func (hb *hostBoard) pinAssignee(args json.RawMessage) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return args
	}
	a, _ := m["assignee"].(string)
	if a == "" || strings.Contains(a, "/") {
		return args
	}
	if s, _, ok := hb.resolve(a); ok && s != nil {
		m["assignee"] = s.ID + "/" + a
		if b, err := json.Marshal(m); err == nil {
			return b
		}
	}
	return args
}

// flushHistory appends buffered history items to the parent transcript,
// after the runBoard result.
func (hb *hostBoard) flushHistory() {
	hb.mu.Lock()
	items := hb.history
	hb.history = nil
	hb.mu.Unlock()
	if hb.host == nil || len(items) == 0 {
		return
	}
	// In the board's order, not the order workers happened to finish in:
	// the host's history must not depend on scheduling (a resumed run
	// rebuilds it step for step).
	for _, t := range hb.b.Tasks() {
		task := t.ID
		if _, ok := items[task]; !ok {
			continue
		}
		// A worker stopped mid-call (cancel, timeout) leaves calls with no
		// result; they must not enter the host's history as orphans (W2).
		for _, m := range transcript.Whole(items[task]) {
			if err := hb.host.tr.AppendMessage(m); err != nil {
				hb.log.Warn().Err(err).Str("task", task).Msg("worker item not added to the host history")
			}
		}
	}
}

// writeStatus renders the board into the host's context block.
func (hb *hostBoard) writeStatus(b *strings.Builder) {
	counts, head := hb.b.Overview(maxStatusLines)
	total := 0
	for _, n := range counts {
		total += n
	}
	if total == 0 {
		return
	}
	fmt.Fprintf(b, "\n<board tasks=\"%d\" pending=\"%d\" running=\"%d\" completed=\"%d\" failed=\"%d\" cancelled=\"%d\">\n",
		total, counts[board.Pending], counts[board.Running], counts[board.Completed], counts[board.Failed], counts[board.Cancelled])
	for _, t := range head {
		fmt.Fprintf(b, "- %s [%s] %s: %s\n", t.ID, t.Status, t.Agent(), oneLine(clip(t.Goal, 80)))
	}
	if total > len(head) {
		fmt.Fprintf(b, "… %d more (listTasks shows all)\n", total-len(head))
	}
	b.WriteString("</board>\n")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
