package view

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsdrun/fsd/event"
)

// maxRows bounds the tasks drawn; a bigger board shows the running and
// most recent ones and counts the rest.
const maxRows = 20

type row struct {
	id, agent, status string
	started, finished time.Time
	tokens            int
	seq               int
}

// Board is an event.Sink that keeps the state of a run's tasks and draws
// it. It is safe for concurrent use.
type Board struct {
	mu     sync.Mutex
	w      io.Writer
	now    func() time.Time
	rows   map[string]*row
	seq    int
	tokens int
	skills []string
	status string
	lines  int // lines drawn last time, to move back over
	dirty  bool
	stop   chan struct{}
	done   chan struct{}
}

// NewBoard returns a board drawing to w. Start begins redrawing.
func NewBoard(w io.Writer, now func() time.Time) *Board {
	if now == nil {
		now = time.Now
	}
	return &Board{w: w, now: now, rows: map[string]*row{}}
}

// Emit updates the state from one event.
func (b *Board) Emit(e event.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dirty = true
	switch e.Type {
	case event.Request:
		if e.Tokens != nil {
			b.tokens += e.Tokens.Total
			if r := b.rows[e.Task]; r != nil && e.Task != "" {
				r.tokens += e.Tokens.Total
			}
		}
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
		}
		if e.Agent != "" {
			r.agent = e.Agent
		}
		r.status = strings.TrimPrefix(e.Type, "task.")
		switch e.Type {
		case event.TaskAdded:
			r.status = "pending"
		case event.TaskStarted:
			r.status = "running"
			r.started, r.finished = e.Time, time.Time{}
		default:
			r.finished = e.Time
		}
	case event.BoardFinished:
		b.status = "board " + e.Status
	case event.RunFinished:
		b.status = "finished"
		if e.Err != "" {
			b.status = "failed"
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
	rows := make([]*row, 0, len(b.rows))
	counts := map[string]int{}
	for _, r := range b.rows {
		rows = append(rows, r)
		counts[r.status]++
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].seq < rows[j].seq })
	hidden := 0
	if len(rows) > maxRows {
		// Keep running tasks and the most recent others.
		var keep []*row
		for _, r := range rows {
			if r.status == "running" {
				keep = append(keep, r)
			}
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
	var s strings.Builder
	if len(b.skills) > 0 {
		fmt.Fprintf(&s, "skills loaded: %s\n", strings.Join(b.skills, ", "))
	}
	if len(rows) > 0 {
		fmt.Fprintf(&s, "%-16s %-10s %-28s %8s %8s\n", "TASK", "STATUS", "AGENT", "ELAPSED", "TOKENS")
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
		fmt.Fprintf(&s, "%-16s %-10s %-28s %8s %8d\n", clip(r.id, 16), r.status, clip(r.agent, 28), elapsed, r.tokens)
	}
	if hidden > 0 {
		fmt.Fprintf(&s, "… %d more tasks\n", hidden)
	}
	fmt.Fprintf(&s, "tasks %d: %d pending, %d running, %d completed, %d failed, %d cancelled · %d tokens",
		len(b.rows), counts["pending"], counts["running"], counts["completed"], counts["failed"], counts["cancelled"], b.tokens)
	if b.status != "" {
		s.WriteString(" · " + b.status)
	}
	s.WriteString("\n")
	return s.String()
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

// draw moves the cursor back over the previous frame and writes the new
// one, clearing each line (ANSI: cursor up, erase line).
func (b *Board) draw(force bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.dirty && !force && b.runningLocked() == 0 {
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

func (b *Board) runningLocked() int {
	n := 0
	for _, r := range b.rows {
		if r.status == "running" {
			n++
		}
	}
	return n
}
