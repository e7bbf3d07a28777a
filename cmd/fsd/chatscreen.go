package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/view"
)

// chatScreen draws one chat turn on a terminal: the host's text as it
// streams and its tool calls, one line each, and below them the live
// board (view.Board's frame), redrawn in place. Text above the board is
// final once its line ends; only the unfinished last line and the board
// are drawn again. It is an event.Sink.
type chatScreen struct {
	mu    sync.Mutex
	w     io.Writer
	width func() int
	board *view.Board

	pending string // text not drawn yet
	partial string // the unfinished last line, on screen above the board
	// rows are the terminal rows drawn below the finished text: the
	// partial line's and the board's.
	rows, boardRows int
	frame           string // the board as last drawn
	held            int    // prompts on screen: no redraw meanwhile
	// streamed: text deltas of the host's current message were shown,
	// so its whole text, which follows, is not shown again.
	streamed bool
	// said is the host's last whole message, to tell whether the
	// turn's answer was shown.
	said  string
	tasks bool // the board has had a task: its last frame stays

	stop, done chan struct{}
}

func newChatScreen(w io.Writer) *chatScreen {
	s := &chatScreen{w: w, board: view.NewBoard(nil, nil), width: func() int { return 0 }}
	if f, ok := w.(*os.File); ok {
		s.width = func() int {
			cols, _, err := term.GetSize(int(f.Fd()))
			if err != nil {
				return 0
			}
			return cols
		}
	}
	return s
}

// Emit shows the host's text and calls, and keeps the board's state.
//
// Q21: a delta is drawn at the next tick; the whole message that follows
// the deltas is not drawn again.
func (s *chatScreen) Emit(e event.Event) {
	s.board.Emit(e)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e.Type {
	case event.TaskAdded:
		s.tasks = true
	}
	if e.Task != "" || e.Agent != "" || e.Replayed {
		return
	}
	switch e.Type {
	case event.Text:
		if e.Delta {
			s.pending += e.Text
			s.streamed = true
			return
		}
		if !s.streamed {
			s.pending += e.Text
		}
		s.streamed, s.said = false, e.Text
		s.endLine()
	case event.TextReset:
		if s.streamed {
			s.endLine()
			s.pending += "(the model call was retried; its answer follows)\n"
			s.streamed = false
		}
	case event.ToolCall:
		s.endLine()
		s.pending += "· " + e.Tool + " " + clipArgs(e.Args) + "\n"
	}
}

// endLine ends the text's last line, if it is unfinished.
func (s *chatScreen) endLine() {
	text := s.partial + s.pending
	if text != "" && !strings.HasSuffix(text, "\n") {
		s.pending += "\n"
	}
}

// clipArgs is a call's arguments on one short line.
func clipArgs(args json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, args) != nil {
		return ""
	}
	a := buf.String()
	if utf8.RuneCountInString(a) > 60 {
		a = string([]rune(a)[:59]) + "…"
	}
	return a
}

// start redraws every interval until finish.
func (s *chatScreen) start(interval time.Duration) {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.mu.Lock()
				s.draw()
				s.mu.Unlock()
			}
		}
	}()
}

// finish stops redrawing and draws the turn's end: its text, and the
// board when the turn had tasks (a turn without any leaves no board).
func (s *chatScreen) finish() {
	if s.stop != nil {
		close(s.stop)
		<-s.done
		s.stop = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLine()
	s.draw()
	if !s.tasks && s.boardRows > 0 {
		fmt.Fprintf(s.w, "\x1b[%dA\r\x1b[J", s.boardRows)
	}
	s.rows, s.boardRows, s.partial = 0, 0, ""
}

// hold stops redrawing while a question is on screen; release starts
// again below whatever was written meanwhile (the prompter's hold).
func (s *chatScreen) hold() (release func()) {
	s.mu.Lock()
	s.draw()
	s.held++
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.held--
			// What is on screen stays: the partial line is final now.
			s.rows, s.boardRows, s.partial, s.frame = 0, 0, "", ""
			s.mu.Unlock()
		})
	}
}

// draw moves back over the partial line and the board, clears below and
// writes the new text and the board's frame (ANSI: cursor up, erase
// below). s.mu is held.
func (s *chatScreen) draw() {
	frame := s.board.Frame()
	if s.held > 0 || (s.pending == "" && frame == s.frame) {
		return
	}
	var b strings.Builder
	if s.rows > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", s.rows)
	}
	b.WriteString("\r\x1b[J")
	text := s.partial + s.pending
	i := strings.LastIndexByte(text, '\n')
	b.WriteString(text[:i+1])
	s.partial, s.pending = text[i+1:], ""
	s.rows = 0
	if s.partial != "" {
		b.WriteString(s.partial + "\n")
		s.rows = s.rowsOf(s.partial)
	}
	b.WriteString(frame)
	s.boardRows = 0
	for _, line := range strings.SplitAfter(strings.TrimSuffix(frame, "\n"), "\n") {
		s.boardRows += s.rowsOf(strings.TrimSuffix(line, "\n"))
	}
	s.rows += s.boardRows
	s.frame = frame
	_, _ = io.WriteString(s.w, b.String())
}

// rowsOf is how many terminal rows line takes, wrapped at the width.
func (s *chatScreen) rowsOf(line string) int {
	w := s.width()
	n := utf8.RuneCountInString(line)
	if w <= 0 || n <= w {
		return 1
	}
	return (n + w - 1) / w
}
