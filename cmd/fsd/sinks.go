package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
)

// jsonSink writes one JSON object a line (--events json).
type jsonSink struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func newJSONSink(w io.Writer) *jsonSink { return &jsonSink{enc: json.NewEncoder(w)} }

func (s *jsonSink) Emit(e event.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.enc.Encode(e)
}

// progressSink prints one plain line per state change to stderr: skills
// loaded and unloaded, tasks changing state, the board finishing. Lines
// are buffered and written together at most progressDelay after the first
// of them, and at the end (flush): a write per line was a tenth of a large
// fan-out's time.
type progressSink struct {
	mu      sync.Mutex
	w       *bufio.Writer
	timer   *time.Timer // the flush's, made once and reset
	pending bool        // the timer is set: the buffer holds lines
}

// progressDelay is how late a progress line may appear.
const progressDelay = 100 * time.Millisecond

func newProgressSink(w io.Writer) *progressSink {
	return &progressSink{w: bufio.NewWriterSize(w, 32<<10)}
}

func (s *progressSink) Emit(e event.Event) {
	// A task's lines, most of a large run's, are written straight into
	// the buffer: no string is built, and the call stays shallow on the
	// task's young goroutine.
	if verb := taskVerb(e.Type); verb != "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.w.WriteString("task ")
		writeWho(s.w, &e)
		s.w.WriteString(verb)
		s.w.WriteByte('\n')
		s.arm()
		return
	}
	if !hasLine(&e) {
		// Most of a run's events (model steps, tool calls) have no line:
		// decided here, before progressLine's large frame would grow
		// the task goroutine's young stack for nothing.
		return
	}
	// What a tool or model wrote shows its control characters in caret
	// notation, terminal or not (printable.go).
	line := printable(progressLine(e))
	if line == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.WriteString(line)
	s.w.WriteByte('\n')
	s.arm()
}

// arm starts the flush timer unless it runs. s.mu is held.
func (s *progressSink) arm() {
	if s.pending {
		return
	}
	s.pending = true
	if s.timer == nil {
		s.timer = time.AfterFunc(progressDelay, s.flush)
		return
	}
	s.timer.Reset(progressDelay)
}

// flush writes the buffered lines now.
func (s *progressSink) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending {
		s.timer.Stop()
		s.pending = false
	}
	_ = s.w.Flush() // stderr: nowhere to report a failure to
}

// hasLine reports whether progressLine may write a line for e.
func hasLine(e *event.Event) bool {
	switch e.Type {
	case event.TaskAdded, event.TaskStarted, event.TaskCompleted, event.SkillLoaded, event.SkillUnloaded, event.TaskFailed, event.TaskCancelled, event.BoardFinished,
		event.ApprovalRequested, event.ApprovalAnswered, event.ApprovalGranted, event.ToolProgress:
		return true
	case event.ToolResult:
		return e.Error && e.Task == ""
	}
	return false
}

// taskVerb ends the line of a task's plain state change: " added",
// " started", " completed"; "" for every other event.
func taskVerb(typ string) string {
	switch typ {
	case event.TaskAdded:
		return " added"
	case event.TaskStarted:
		return " started"
	case event.TaskCompleted:
		return " completed"
	}
	return ""
}

// writeWho writes who a task line is about: "ID" or "ID (AGENT)".
func writeWho(w io.StringWriter, e *event.Event) {
	w.WriteString(e.Task)
	if e.Agent != "" {
		w.WriteString(" (")
		w.WriteString(e.Agent)
		w.WriteString(")")
	}
}

func progressLine(e event.Event) string {
	who := e.Task
	if e.Agent != "" {
		who += " (" + e.Agent + ")"
	}
	switch e.Type {
	case event.SkillLoaded:
		return fmt.Sprintf("skill %s loaded", skillName(e))
	case event.SkillUnloaded:
		return fmt.Sprintf("skill %s unloaded: %s", skillName(e), e.Reason)
	case event.TaskAdded, event.TaskStarted, event.TaskCompleted:
		var b strings.Builder
		b.WriteString("task ")
		writeWho(&b, &e)
		b.WriteString(taskVerb(e.Type))
		return b.String()
	case event.TaskFailed:
		return fmt.Sprintf("task %s failed: %s", who, oneLine(e.Err))
	case event.TaskCancelled:
		return fmt.Sprintf("task %s cancelled", who)
	case event.BoardFinished:
		return fmt.Sprintf("board %s", e.Status)
	case event.ApprovalRequested:
		if who == "" {
			who = "host"
		}
		return fmt.Sprintf("approval needed: %s calls %s %s; answer with: fsd approve %s %s [--edit JSON | --reject REASON]",
			who, e.Tool, clipText(string(e.Args), 200), e.Run, e.Approval)
	case event.ApprovalAnswered:
		line := fmt.Sprintf("call %s %s %s", e.Approval, e.Tool, e.Status)
		if e.Reason != "" {
			line += ": " + e.Reason
		}
		return line + " (by " + e.By + ")"
	case event.ApprovalGranted:
		return fmt.Sprintf("call %s %s ran without asking: %s", e.Approval, e.Tool, runrecord.Grant{Skill: e.Skill, Rule: e.Reason})
	case event.ToolProgress:
		if who == "" {
			who = "host"
		}
		return who + ": " + e.ProgressText()
	case event.ToolResult:
		if e.Error && e.Task == "" {
			return fmt.Sprintf("tool %s refused: %s", e.Tool, firstLine(e.Result))
		}
	}
	return ""
}

// skillName is a skill's id and version; a SKILL.md without a version has
// none to show.
func skillName(e event.Event) string {
	if e.Version == "" {
		return e.Skill
	}
	return e.Skill + " " + e.Version
}

// firstLine is s's first line as a progress line shows it: at most 160
// bytes, not cut inside a character.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 160 {
		n := 160
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}
