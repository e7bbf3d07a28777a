package view

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
)

// maxRows bounds the tasks drawn; a bigger board shows the running and
// most recent ones and counts the rest.
const maxRows = 20

type row struct {
	id, agent, status string
	started, finished time.Time
	usage             model.Usage
	cost              float64
	seq               int
	// progress is the last progress report of the task's call in flight.
	progress string
}

// Board is an event.Sink that keeps the state of a run's tasks and draws
// it. It is safe for concurrent use.
//
// A frame costs the rows it draws, not the board: the rows are kept in
// the order added, with the count of each status and the set of running
// rows kept up to date as events arrive, so a board of 100,000 tasks
// redraws as fast as one of ten.
type Board struct {
	mu   sync.Mutex
	w    io.Writer
	now  func() time.Time
	rows map[string]*row
	// order holds the rows in the order added (by seq); counts the rows
	// of each status; running the rows whose status is running.
	order   []*row
	counts  map[string]int
	running map[*row]struct{}
	seq     int
	// usage and cost are the run's: the resumed run's start, plus each
	// request, until run.finished says the total.
	usage  model.Usage
	cost   float64
	priced bool // some cost was reported: show the cost column
	skills []string
	status string
	// waiting counts calls waiting for approval.
	waiting int
	// hostProgress is the last progress report of a host call in flight.
	hostProgress string
	lines        int // lines drawn last time, to move back over
	dirty        bool
	// held counts prompts on screen: no redraw while any is.
	held int
	stop chan struct{}
	done chan struct{}
}

// NewBoard returns a board drawing to w. Start begins redrawing.
func NewBoard(w io.Writer, now func() time.Time) *Board {
	if now == nil {
		now = time.Now
	}
	return &Board{w: w, now: now, rows: map[string]*row{}, counts: map[string]int{}, running: map[*row]struct{}{}}
}

// setStatus changes a row's status and keeps the counts and the running
// set with it.
//
// G3: a frame reads these instead of walking the rows.
func (b *Board) setStatus(r *row, status string) {
	if r.status == status {
		return
	}
	if r.status != "" {
		b.counts[r.status]--
	}
	if r.status == "running" {
		delete(b.running, r)
	}
	r.status = status
	b.counts[status]++
	if status == "running" {
		b.running[r] = struct{}{}
	}
}

// Emit updates the state from one event.
func (b *Board) Emit(e event.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dirty = true
	switch e.Type {
	case event.RunStarted:
		if e.Usage != nil { // a resumed run: what it used before
			b.usage, b.cost = *e.Usage, e.Cost
		}
	case event.Request:
		// The request's usage as the provider reported it (or the
		// estimate, marked): the figures run.json and the task events
		// add up, so the board shows the same numbers.
		if e.Usage != nil {
			b.usage, b.cost = b.usage.Add(*e.Usage), b.cost+e.Cost
			if r := b.rows[e.Task]; r != nil && e.Task != "" {
				r.usage, r.cost = r.usage.Add(*e.Usage), r.cost+e.Cost
			}
		}
		b.priced = b.priced || e.Cost > 0
	case event.SkillLoaded:
		b.skills = append(b.skills, e.Skill)
	case event.SkillUnloaded:
		for i, s := range b.skills {
			if s == e.Skill {
				b.skills = append(b.skills[:i], b.skills[i+1:]...)
				break
			}
		}
	case event.TaskAdded, event.TaskStarted, event.TaskCompleted, event.TaskFailed, event.TaskCancelled:
		r := b.rows[e.Task]
		if r == nil {
			b.seq++
			r = &row{id: e.Task, seq: b.seq}
			b.rows[e.Task] = r
			b.order = append(b.order, r)
		}
		if e.Agent != "" {
			r.agent = e.Agent
		}
		r.progress = ""
		if e.Usage != nil { // a task's end says what all its calls used
			r.usage, r.cost = *e.Usage, e.Cost
		}
		switch e.Type {
		case event.TaskAdded:
			b.setStatus(r, "pending")
		case event.TaskStarted:
			b.setStatus(r, "running")
			r.started, r.finished = e.Time, time.Time{}
		default:
			b.setStatus(r, strings.TrimPrefix(e.Type, "task."))
			r.finished = e.Time
		}
	case event.ApprovalRequested, event.ApprovalAnswered:
		// A task waiting for a person shows it; the host's calls show in
		// the summary line.
		if r := b.rows[e.Task]; r != nil && e.Task != "" {
			status := "running"
			if e.Type == event.ApprovalRequested {
				status = "waiting"
			}
			b.setStatus(r, status)
		}
		if e.Type == event.ApprovalRequested {
			b.waiting++
		} else if b.waiting > 0 {
			b.waiting--
		}
	case event.ToolProgress, event.ToolResult:
		// A call's progress shows under its task until its result.
		line := ""
		if e.Type == event.ToolProgress {
			line = e.ProgressText()
		}
		if r := b.rows[e.Task]; r != nil && e.Task != "" {
			r.progress = line
		} else if e.Task == "" {
			b.hostProgress = line
		}
	case event.BoardFinished:
		b.status = "board " + e.Status
	case event.RunFinished:
		if e.Usage != nil {
			b.usage, b.cost = *e.Usage, e.Cost
		}
		switch {
		case e.Status != "":
			b.status = e.Status
		case e.Err != "":
			b.status = string(runrecord.Failed)
		default:
			b.status = string(runrecord.Finished)
		}
	}
}

// Frame renders the current state as lines, without escape codes.
func (b *Board) Frame() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.frame()
}

func (b *Board) frame() string {
	rows := b.order
	hidden := 0
	if len(rows) > maxRows {
		// Keep running tasks and the most recent others.
		keep := make([]*row, 0, maxRows+len(b.running))
		for r := range b.running {
			keep = append(keep, r)
		}
		for i := len(rows) - 1; i >= 0 && len(keep) < maxRows; i-- {
			if rows[i].status != "running" {
				keep = append(keep, rows[i])
			}
		}
		sort.Slice(keep, func(i, j int) bool { return keep[i].seq < keep[j].seq })
		hidden = len(rows) - len(keep)
		rows = keep
	}
	counts := b.counts
	var s strings.Builder
	if len(b.skills) > 0 {
		fmt.Fprintf(&s, "skills loaded: %s\n", strings.Join(b.skills, ", "))
	}
	if len(rows) > 0 {
		fmt.Fprintf(&s, "%-16s %-10s %-24s %8s %9s %9s %9s %8s", "TASK", "STATUS", "AGENT", "ELAPSED", "IN", "CACHED", "WRITTEN", "OUT")
		if b.priced {
			fmt.Fprintf(&s, " %9s", "COST")
		}
		s.WriteString("\n")
	}
	now := b.now()
	for _, r := range rows {
		elapsed := ""
		if !r.started.IsZero() {
			end := r.finished
			if end.IsZero() {
				end = now
			}
			elapsed = end.Sub(r.started).Round(100 * time.Millisecond).String()
		}
		u := r.usage
		fmt.Fprintf(&s, "%-16s %-10s %-24s %8s %9d %9d %9d %8d", clip(r.id, 16), r.status, clip(r.agent, 24), elapsed,
			u.InputTokens, u.CachedInputTokens, u.CacheWriteTokens, u.OutputTokens)
		if b.priced {
			fmt.Fprintf(&s, " %9s", Cost(r.cost))
		}
		s.WriteString("\n")
		if r.status == "running" && r.progress != "" {
			s.WriteString("  ↳ " + r.progress + "\n")
		}
	}
	if hidden > 0 {
		fmt.Fprintf(&s, "… %d more tasks\n", hidden)
	}
	if b.hostProgress != "" {
		s.WriteString("host ↳ " + b.hostProgress + "\n")
	}
	fmt.Fprintf(&s, "tasks %d: %d pending, %d running, %d completed, %d failed, %d cancelled · %s",
		len(b.rows), counts["pending"], counts["running"], counts["completed"], counts["failed"], counts["cancelled"], Tokens(b.usage))
	if b.waiting > 0 {
		fmt.Fprintf(&s, " · %d waiting for approval", b.waiting)
	}
	if b.priced {
		s.WriteString(" · cost " + Cost(b.cost))
	}
	if b.status != "" {
		s.WriteString(" · " + b.status)
	}
	s.WriteString("\n")
	return s.String()
}

// Tokens renders a usage's four figures in one phrase, the way every
// view of fsd says them: "1200 in (900 cached, 40 written), 85 out", and
// "(estimated)" when fsd counted them itself.
func Tokens(u model.Usage) string {
	s := fmt.Sprintf("tokens %d in", u.InputTokens)
	if u.CachedInputTokens > 0 || u.CacheWriteTokens > 0 {
		s += fmt.Sprintf(" (%d cached, %d written)", u.CachedInputTokens, u.CacheWriteTokens)
	}
	s += fmt.Sprintf(", %d out", u.OutputTokens)
	if u.Estimated {
		s += " (estimated)"
	}
	return s
}

// Cost renders a cost: four decimals below 1, two above.
func Cost(c float64) string {
	if c < 1 {
		return fmt.Sprintf("%.4f", c)
	}
	return fmt.Sprintf("%.2f", c)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// Start redraws the board in place every interval until Stop.
func (b *Board) Start(interval time.Duration) {
	b.stop, b.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(b.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				b.draw(true)
				return
			case <-t.C:
				b.draw(false)
			}
		}
	}()
}

// Stop draws the last frame and stops redrawing.
func (b *Board) Stop() {
	if b.stop == nil {
		return
	}
	close(b.stop)
	<-b.done
	b.stop = nil
}

// Hold stops redrawing while a prompt is on screen; release starts again,
// drawing the next frame below whatever was written meanwhile.
func (b *Board) Hold() (release func()) {
	b.draw(true) // the state the question is about
	b.mu.Lock()
	b.held++
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.held--
			b.lines, b.dirty = 0, true
			b.mu.Unlock()
		})
	}
}

// draw moves the cursor back over the previous frame and writes the new
// one, clearing each line (ANSI: cursor up, erase line).
func (b *Board) draw(force bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held > 0 || (!b.dirty && !force && b.runningLocked() == 0) {
		return
	}
	b.dirty = false
	frame := b.frame()
	var s strings.Builder
	if b.lines > 0 {
		fmt.Fprintf(&s, "\x1b[%dA", b.lines)
	}
	for _, line := range strings.SplitAfter(strings.TrimSuffix(frame, "\n"), "\n") {
		s.WriteString("\r\x1b[2K")
		s.WriteString(line)
	}
	s.WriteString("\n")
	b.lines = strings.Count(frame, "\n")
	_, _ = io.WriteString(b.w, s.String())
}

func (b *Board) runningLocked() int { return len(b.running) }
