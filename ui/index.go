package ui

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
)

// runIndex is what fsd ui keeps of a run between fetches of its pages,
// so that a page costs its own tasks and what the record gained since
// the last fetch, not the run: the Stream's index of the generators, and
// where each task's board entry and the event lines a page applies are.
// Only the lines a page shows are decoded, when it is built.
//
// G10: a page of a run whose index is kept costs its tasks and what the
// record gained.
type runIndex struct {
	s      *runrecord.Stream
	board  *runrecord.File // nil: the record has no board.json
	events *runrecord.File // nil: no events.jsonl yet
	tasks  map[string]*taskLines
	// onBoard are the board's tasks in its order, each once; placed the
	// tasks the events placed, in the order of their first placing line.
	onBoard, placed []*taskLines
	// order is the run's tasks as a page places them: the board's, then
	// the others the events placed (viewBuilder.task).
	order []*taskLines
}

// taskLines is where one task's board entry and event lines are.
type taskLines struct {
	id    string
	board runrecord.Span // N 0: not on the board
	// first is where its first placing event line is; -1: none.
	first  int64
	events []runrecord.Span
}

// openIndex indexes the record in dir for its pages.
func openIndex(dir string) (*runIndex, error) {
	s, err := runrecord.OpenStream(dir)
	if err != nil {
		return nil, err
	}
	x := &runIndex{s: s, tasks: map[string]*taskLines{}}
	if err := x.read(true); err != nil {
		x.close()
		return nil, err
	}
	return x, nil
}

// refresh brings the index up to date with the record: what its files
// gained, or a file replaced read again whole.
func (x *runIndex) refresh() error {
	if err := x.s.Refresh(); err != nil {
		return err
	}
	whole := x.events != nil && x.events.Replaced()
	if whole {
		x.events.Close()
		x.events, x.tasks, x.placed = nil, map[string]*taskLines{}, nil
	}
	return x.read(whole)
}

// read indexes the board when it changed (or whole is set) and the
// event lines appended since the last read, and places the tasks.
func (x *runIndex) read(whole bool) error {
	if whole || (x.board == nil && exists(x.s.Dir, runrecord.BoardFile)) || (x.board != nil && x.board.Changed()) {
		if err := x.readBoard(); err != nil {
			return err
		}
		whole = true
	}
	n := len(x.placed)
	if err := x.readEvents(); err != nil {
		return err
	}
	if whole {
		x.order = slices.Clip(x.onBoard)
		n = 0
	}
	for _, t := range x.placed[n:] {
		if t.board.N == 0 {
			x.order = append(x.order, t)
		}
	}
	return nil
}

func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// task is id's lines, added when new.
func (x *runIndex) task(id []byte) *taskLines {
	t := x.tasks[string(id)]
	if t == nil {
		t = &taskLines{id: string(id), first: -1}
		x.tasks[t.id] = t
	}
	return t
}

// readBoard indexes board.json again: where each task's entry is.
func (x *runIndex) readBoard() error {
	if x.board != nil {
		x.board.Close()
		x.board = nil
	}
	for id, t := range x.tasks {
		t.board = runrecord.Span{}
		if t.first < 0 && len(t.events) == 0 {
			delete(x.tasks, id)
		}
	}
	x.onBoard = nil
	f, err := runrecord.OpenFile(x.s.Dir, runrecord.BoardFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	x.board = f
	return f.EachBoardTask(func(id []byte, sp runrecord.Span) error {
		t := x.task(id)
		if t.board.N == 0 {
			x.onBoard = append(x.onBoard, t)
		}
		t.board = sp // the last entry of an id is the one a page shows
		return nil
	})
}

// readEvents indexes the event lines appended since the last read.
func (x *runIndex) readEvents() error {
	if x.events == nil {
		f, err := runrecord.OpenFile(x.s.Dir, runrecord.EventsFile)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		x.events = f
	}
	return x.events.EachNewLine(func(line []byte, sp runrecord.Span) error {
		typ, id, err := eventTask(line)
		if err != nil || len(id) == 0 {
			return err
		}
		t := x.task(id)
		if t.first < 0 && placing(typ) {
			t.first = sp.Off
			x.placed = append(x.placed, t)
		}
		t.events = append(t.events, sp)
		return nil
	})
}

// placing says whether an event of type typ places its task (gives it a
// row when it has none yet), as viewBuilder.event has it.
func placing(typ string) bool {
	switch typ {
	case event.TaskAdded, event.TaskStarted, event.TaskCompleted, event.TaskFailed, event.TaskCancelled:
		return true
	}
	return false
}

// eventTask is the type and task of an event line a page applies (a
// task's start, end or tool progress), or none for any other line: from
// its leading bytes when they are as the writer puts them — "type",
// "time" (absent from a line written by hand), "run", then "task" when
// the event has one, event.appendEvent's order, which
// TestEventTaskAgreesWithDecoding pins — else by decoding it. Only the
// key right after "run" is the event's task: a "task" key further on
// belongs to a value (a tool call's arguments, say).
func eventTask(line []byte) (typ string, task []byte, err error) {
	if t, rest, ok := leadingString(line, `{"type":"`); ok {
		if typ = pageType(t); typ == "" {
			return "", nil, nil
		}
		if _, after, ok := leadingString(rest, `,"time":"`); ok {
			rest = after
		}
		if _, rest, ok := leadingString(rest, `,"run":"`); ok {
			if !bytes.HasPrefix(rest, []byte(`,"task":"`)) {
				return typ, nil, nil
			}
			if id, _, ok := leadingString(rest, `,"task":"`); ok {
				return typ, id, nil
			}
		}
	}
	if !applied(line) {
		return "", nil, nil
	}
	var e struct{ Type, Task string }
	if err := json.Unmarshal(line, &e); err != nil {
		return "", nil, err
	}
	if typ = pageType([]byte(e.Type)); typ == "" {
		return "", nil, nil
	}
	return typ, []byte(e.Task), nil
}

// leadingString cuts prefix, then a JSON string's content up to its
// closing quote, off the front of b; not ok when b does not start so or
// the string has an escape.
func leadingString(b []byte, prefix string) (s, rest []byte, ok bool) {
	b, ok = bytes.CutPrefix(b, []byte(prefix))
	if !ok {
		return nil, nil, false
	}
	s, rest, ok = bytes.Cut(b, []byte(`"`))
	if !ok || bytes.IndexByte(s, '\\') >= 0 {
		return nil, nil, false
	}
	return s, rest, true
}

// pageTypes are the types of the events a page applies.
var pageTypes = []string{event.TaskAdded, event.TaskStarted, event.TaskCompleted, event.TaskFailed, event.TaskCancelled, event.ToolProgress, event.ToolResult}

// pageType is t as one of pageTypes, or "".
func pageType(t []byte) string {
	for _, p := range pageTypes {
		if string(t) == p {
			return p
		}
	}
	return ""
}

// page is the run's view with its tasks from the from-th, as ViewPage
// has it.
func (x *runIndex) page(from int, now time.Time) (RunView, error) {
	b := newViewBuilder(x.s.Summary, now)
	total := len(x.order)
	page := x.order[min(from, total):min(from+PageTasks, total)]
	type line struct {
		sp runrecord.Span
		t  *taskLines
	}
	var lines []line
	for _, t := range page {
		b.task(t.id)
		for _, sp := range t.events {
			lines = append(lines, line{sp, t})
		}
	}
	for _, t := range page {
		if sp := t.board; sp.N > 0 {
			bt, err := x.board.BoardTask(sp)
			if err != nil {
				return RunView{}, err
			}
			b.boardTask(bt)
		}
	}
	// The events in the record's order, as a read of the whole file
	// applies them; a task's own are all that touch its row.
	slices.SortFunc(lines, func(a, b line) int { return cmp.Compare(a.sp.Off, b.sp.Off) })
	for _, l := range lines {
		raw, err := x.events.Line(l.sp)
		if err != nil {
			return RunView{}, err
		}
		var e event.Event
		if err := json.Unmarshal(raw, &e); err != nil {
			return RunView{}, err
		}
		t := l.t
		if e.Task != t.id || (!placing(e.Type) && t.board.N == 0 && (t.first < 0 || l.sp.Off < t.first)) {
			continue // a tool's event before its task had a row
		}
		b.event(e)
	}
	b.waiting()
	var gens []int // the host's and the page's tasks'
	for i, gi := range x.s.Gens {
		if gi.Task == "" {
			gens = append(gens, i)
		} else if t := b.byID[gi.Task]; t != nil {
			gens = append(gens, i)
			b.addUsage(gi.Task, gi.Agent, gi.In, gi.Out)
		}
	}
	v := b.v
	v.TasksTotal, v.From = total, min(from, total)
	if v.Tasks = b.tasks(); v.Tasks == nil && total > 0 {
		v.Tasks = []TaskView{}
	}
	for _, i := range gens {
		g, err := x.s.Read(i)
		if err != nil {
			return RunView{}, err
		}
		v.Gens = append(v.Gens, b.gen(g))
	}
	return v, nil
}

// close closes the record's files.
func (x *runIndex) close() {
	x.s.Close()
	for _, f := range []*runrecord.File{x.board, x.events} {
		if f != nil {
			f.Close()
		}
	}
}

// maxIndexes is how many runs' indexes fsd ui keeps: a person looks at
// a few runs at a time, and a run of 100,000 tasks' index is tens of MB.
const maxIndexes = 4

// indexes keeps the indexes of the runs whose pages were fetched lately,
// by folder, dropping the least recently used beyond maxIndexes.
type indexes struct {
	mu   sync.Mutex
	runs map[string]*kept
	tick uint64
}

// kept is one run's index; its lock is held while a page of it is built.
type kept struct {
	mu   sync.Mutex
	x    *runIndex // nil until built, or after an error
	used uint64
	gone bool // dropped from indexes: whoever holds it closes what it opens
}

// page is ViewPage of the run in dir, from its kept index.
func (c *indexes) page(dir string, from int, now time.Time) (RunView, error) {
	c.mu.Lock()
	if c.runs == nil {
		c.runs = map[string]*kept{}
	}
	k := c.runs[dir]
	if k == nil {
		k = &kept{}
		c.runs[dir] = k
	}
	c.tick++
	k.used = c.tick
	var drop *kept
	if len(c.runs) > maxIndexes {
		at := ""
		for d, o := range c.runs {
			if drop == nil || o.used < drop.used {
				drop, at = o, d
			}
		}
		delete(c.runs, at)
	}
	c.mu.Unlock()
	if drop != nil {
		drop.drop()
	}

	k.mu.Lock()
	defer k.mu.Unlock()
	var err error
	if k.x == nil {
		k.x, err = openIndex(dir)
	} else {
		err = k.x.refresh()
	}
	if err != nil {
		if k.x != nil {
			k.x.close()
			k.x = nil
		}
		return RunView{}, err
	}
	v, err := k.x.page(from, now)
	if k.gone || err != nil {
		k.x.close()
		k.x = nil
	}
	return v, err
}

// drop closes a run's index once no page of it is being built.
func (k *kept) drop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gone = true
	if k.x != nil {
		k.x.close()
		k.x = nil
	}
}

// close drops every index.
func (c *indexes) close() {
	c.mu.Lock()
	runs := c.runs
	c.runs = nil
	c.mu.Unlock()
	for _, k := range runs {
		k.drop()
	}
}
