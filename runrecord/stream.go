package runrecord

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/transcript"
)

// Stream reads a record one generator at a time, for readers that print
// a whole run (fsd show --requests, fsd report): opening it indexes where
// each generator's lines are — a few offsets a line, no line kept — and
// Read decodes one generator's transcript and requests when asked, so
// what a reader holds is one generator, not the run.
//
// G4: a whole run's reader holds one generator at a time.
type Stream struct {
	Dir     string
	Summary Summary
	// Gens are the generators in Record.Gens's order: the host first,
	// then tasks by name.
	Gens []GenInfo

	journal  *os.File // nil for a record made before the journal
	requests *os.File
	blobs    map[string]span
	// cache keeps the blobs read lately: a run's tools are the same few
	// blobs for every task.
	cache  map[string]Line
	agents map[string]string // board agents of the generators without requests
	buf    []byte
}

// GenInfo is one generator as indexed, before it is read.
type GenInfo struct {
	Name    string
	Task    string // "" for the host
	Attempt int
	// Agent is its request lines' agent ("" when it made none on
	// record: Read takes it from the board).
	Agent string
	// Requests counts its request lines: its model calls on record.
	Requests int
	// In and Out add up the usage of its model calls' responses.
	In, Out int

	lines []span // its journal lines (nil for a transcript file)
	reqs  []span // its request and response lines, in order
}

// span is where a line is in its file.
type span struct {
	off int64
	n   int32
	// step of a request or response line; torn: the file's last line
	// has no newline (a run mid-write), skipped when it does not decode.
	step int32
	torn bool
	resp bool // a response line, not a request
}

// StepCount is how many of g's request lines are of step n (1-based),
// or all of them for n 0.
func (g *GenInfo) StepCount(n int) int {
	if n == 0 {
		return g.Requests
	}
	c := 0
	for _, s := range g.reqs {
		if s.step == int32(n-1) && !s.resp {
			c++
		}
	}
	return c
}

// OpenStream indexes the record in dir. Close it when done.
func OpenStream(dir string) (*Stream, error) {
	s := &Stream{Dir: dir, blobs: map[string]span{}, cache: map[string]Line{}}
	var err error
	if s.Summary, err = readCurrent(dir); err != nil {
		return nil, err
	}
	byName := map[string]int{}
	gen := func(name, task string, attempt int) *GenInfo {
		i, ok := byName[name]
		if !ok {
			i = len(s.Gens)
			byName[name] = i
			s.Gens = append(s.Gens, GenInfo{Name: name, Task: task, Attempt: max(attempt, 1)})
		}
		return &s.Gens[i]
	}
	if err := s.indexGens(gen); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.indexRequests(byName, gen); err != nil {
		s.Close()
		return nil, err
	}
	// The host first, then tasks by name, as Open orders them.
	sort.SliceStable(s.Gens, func(i, j int) bool {
		if (s.Gens[i].Task == "") != (s.Gens[j].Task == "") {
			return s.Gens[i].Task == ""
		}
		return s.Gens[i].Name < s.Gens[j].Name
	})
	return s, nil
}

// Close closes the record's files.
func (s *Stream) Close() error {
	var err error
	for _, f := range []*os.File{s.journal, s.requests} {
		if f != nil {
			err = errors.Join(err, f.Close())
		}
	}
	return err
}

// indexGens finds each generator's journal lines, or in a record made
// before the journal, its transcript file.
func (s *Stream) indexGens(gen func(name, task string, attempt int) *GenInfo) error {
	path := filepath.Join(s.Dir, JournalFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return s.indexTranscriptFiles(gen)
	}
	if err != nil {
		return err
	}
	s.journal = f
	return eachLine(f, path, true, func(b []byte, sp span) error {
		h, ok := journalHead(b)
		if !ok {
			if sp.torn {
				return nil // a torn tail: readJournal stops there too
			}
			return errors.New("not a journal line")
		}
		g := h.Generator()
		ge := gen(GenName(g), g.Task, g.Attempt)
		ge.lines = append(ge.lines, sp)
		return nil
	})
}

// journalHead reads the head of a journal line: from its leading bytes
// when they are as the journal writes them, else by decoding the line.
func journalHead(b []byte) (journal.Head, bool) {
	if bytes.HasPrefix(b, []byte(`{"gen":"host",`)) {
		return journal.Head{Gen: "host"}, true
	}
	if rest, ok := bytes.CutPrefix(b, []byte(`{"gen":"task","task":"`)); ok {
		id, rest, ok := bytes.Cut(rest, []byte(`"`))
		if ok && bytes.IndexByte(id, '\\') < 0 {
			h := journal.Head{Gen: "task", Task: string(id)}
			if n, ok := bytes.CutPrefix(rest, []byte(`,"attempt":`)); ok {
				end := 0
				for end < len(n) && n[end] >= '0' && n[end] <= '9' {
					end++
				}
				h.Attempt, _ = strconv.Atoi(string(n[:end]))
			}
			return h, true
		}
	}
	var h journal.Head
	err := json.Unmarshal(b, &h)
	return h, err == nil
}

// indexTranscriptFiles lists an older record's transcript files.
func (s *Stream) indexTranscriptFiles(gen func(name, task string, attempt int) *GenInfo) error {
	files, _ := filepath.Glob(filepath.Join(s.Dir, TasksDir, "*.jsonl"))
	sort.Strings(files)
	if _, err := os.Stat(filepath.Join(s.Dir, HostFile)); err == nil {
		files = append([]string{filepath.Join(s.Dir, HostFile)}, files...)
	}
	for _, f := range files {
		rel, _ := filepath.Rel(s.Dir, f)
		name := filepath.ToSlash(rel)
		if name == HostFile {
			gen(name, "", 1)
			continue
		}
		file := strings.TrimSuffix(strings.TrimPrefix(name, TasksDir+"/"), ".jsonl")
		attempt := 1
		if base, n, ok := strings.Cut(file, ".attempt-"); ok {
			if a, err := strconv.Atoi(n); err == nil {
				file, attempt = base, a
			}
		}
		gen(name, taskOfFile(file), attempt)
	}
	return nil
}

// indexRequests finds each generator's request and response lines and
// each blob, and adds up each generator's usage as Read would attach it.
func (s *Stream) indexRequests(byName map[string]int, gen func(name, task string, attempt int) *GenInfo) error {
	path := filepath.Join(s.Dir, RequestsFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	s.requests = f
	return eachLine(f, path, false, func(b []byte, sp span) error {
		if rest, ok := bytes.CutPrefix(b, []byte(`{"kind":"blob","hash":"`)); ok {
			if h, _, ok := bytes.Cut(rest, []byte(`"`)); ok {
				s.blobs[string(h)] = sp
				return nil
			}
		}
		var l struct {
			Kind  string `json:"kind"`
			Hash  string `json:"hash"`
			Gen   string `json:"gen"`
			Task  string `json:"task"`
			Agent string `json:"agent"`
			Step  int    `json:"step"`
			Usage *struct {
				In  int `json:"input_tokens"`
				Out int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		sp.step = int32(l.Step)
		switch l.Kind {
		case KindBlob:
			s.blobs[l.Hash] = sp
		case KindRequest:
			i, ok := byName[l.Gen]
			if !ok {
				return fmt.Errorf("request of %s, which has no transcript", l.Gen)
			}
			g := &s.Gens[i]
			g.Task, g.Agent = l.Task, l.Agent
			g.Requests++
			g.reqs = append(g.reqs, sp)
		case KindResponse:
			i, ok := byName[l.Gen]
			if !ok {
				return nil
			}
			g := &s.Gens[i]
			// Read attaches a response to its step's request, the last
			// one of that step; one with none is dropped.
			for i := len(g.reqs) - 1; i >= 0 && l.Usage != nil; i-- {
				if r := g.reqs[i]; !r.resp && r.step == sp.step {
					g.In += l.Usage.In
					g.Out += l.Usage.Out
					break
				}
			}
			sp.resp = true
			g.reqs = append(g.reqs, sp)
		}
		return nil
	})
}

// eachLine calls fn with each non-blank line of f and where it is. The
// last line without a newline is passed, marked torn, when tail is set,
// and skipped otherwise (readLines skips it, readJournal tries it).
func eachLine(f *os.File, path string, tail bool, fn func([]byte, span) error) error {
	br := bufio.NewReaderSize(f, 64<<10)
	var off int64
	for n := 1; ; n++ {
		b, err := readLine(br)
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		torn := err == io.EOF
		if torn && !tail {
			return nil
		}
		if t := bytes.TrimSpace(b); len(t) > 0 {
			sp := span{off: off, n: int32(len(b)), torn: torn}
			if ferr := fn(t, sp); ferr != nil {
				return fmt.Errorf("%s:%d: %w", path, n, ferr)
			}
		}
		if torn {
			return nil
		}
		off += int64(len(b))
	}
}

// line reads the line at sp of f into the stream's buffer.
func (s *Stream) line(f *os.File, sp span) ([]byte, error) {
	n := int(sp.n)
	if cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	b := s.buf[:n]
	if k, err := f.ReadAt(b, sp.off); k < n {
		// The file shrank since it was indexed.
		return nil, fmt.Errorf("%s: %w", f.Name(), errors.Join(io.ErrUnexpectedEOF, err))
	}
	return bytes.TrimSpace(b), nil
}

// blob reads the blob of hash, from the cache when it was read lately.
func (s *Stream) blob(hash string) (Line, bool) {
	if l, ok := s.cache[hash]; ok {
		return l, true
	}
	sp, ok := s.blobs[hash]
	if !ok || s.requests == nil {
		return Line{}, false
	}
	b, err := s.line(s.requests, sp)
	if err != nil {
		return Line{}, false
	}
	var l Line
	if json.Unmarshal(b, &l) != nil || l.Kind != KindBlob {
		return Line{}, false
	}
	if len(s.cache) >= 64 {
		clear(s.cache)
	}
	s.cache[hash] = l
	return l, true
}

// Read decodes generator i: its transcript, and its steps with their
// requests rebuilt and responses attached, as Open would have it.
func (s *Stream) Read(i int) (*Gen, error) {
	gi := &s.Gens[i]
	g := &Gen{Name: gi.Name, Task: gi.Task, Attempt: gi.Attempt}
	var err error
	if s.journal == nil {
		path := filepath.Join(s.Dir, filepath.FromSlash(gi.Name))
		g.Entries, err = transcript.ReadFile(path)
		if err != nil && !errors.Is(err, transcript.ErrTornTail) {
			return nil, err
		}
	} else {
		for _, sp := range gi.lines {
			b, err := s.line(s.journal, sp)
			if err != nil {
				return nil, err
			}
			var l JournalLine
			if err := json.Unmarshal(b, &l); err != nil {
				if sp.torn {
					break
				}
				return nil, fmt.Errorf("%s: %s: %w", filepath.Join(s.Dir, JournalFile), gi.Name, err)
			}
			g.Entries = append(g.Entries, l.Entry)
		}
	}
	if g.Messages, err = transcript.Rebuild(g.Entries); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", s.Dir, gi.Name, err)
	}
	for _, sp := range gi.reqs {
		b, err := s.line(s.requests, sp)
		if err != nil {
			return nil, err
		}
		var l Line
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(s.Dir, RequestsFile), err)
		}
		if err := g.apply(l, s.blob); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(s.Dir, RequestsFile), err)
		}
	}
	g.respond()
	if len(g.Steps) == 0 && g.Task != "" {
		if g.Agent == "" {
			g.Agent = s.agent(g.Task)
		}
		g.reconstruct()
	}
	return g, nil
}

// agent is task's agent by the board, for a generator with no request
// on record. The board is read once, keeping the agents of those
// generators only.
func (s *Stream) agent(task string) string {
	if s.agents == nil {
		s.agents = map[string]string{}
		for _, g := range s.Gens {
			if g.Requests == 0 && g.Task != "" {
				s.agents[g.Task] = ""
			}
		}
		_ = EachBoardTask(s.Dir, func(t *board.Task) error {
			if _, ok := s.agents[t.ID]; ok {
				s.agents[t.ID] = t.Agent()
			}
			return nil
		})
	}
	return s.agents[task]
}

// EachBoardTask calls fn with each task of board.json in the record in
// dir, in the board's order, decoding one task at a time. A record with
// no board has no tasks (the error wraps os.ErrNotExist).
func EachBoardTask(dir string, fn func(*board.Task) error) error {
	path := filepath.Join(dir, BoardFile)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 64<<10))
	bad := func(err error) error { return fmt.Errorf("%s: %w", path, err) }
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return bad(errors.Join(err, errors.New("not an object")))
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return bad(err)
		}
		if k != "tasks" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return bad(err)
			}
			continue
		}
		t, err := dec.Token()
		if err != nil {
			return bad(err)
		}
		if t == nil {
			continue // "tasks": null
		}
		if t != json.Delim('[') {
			return bad(errors.New("tasks is not a list"))
		}
		for dec.More() {
			var task board.Task
			if err := dec.Decode(&task); err != nil {
				return bad(err)
			}
			if err := fn(&task); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return bad(err)
		}
	}
	return nil
}

// EachEvent calls fn with each event of events.jsonl in the record in
// dir, in order, decoding one line at a time; a line keep is false of is
// not decoded (keep nil keeps all). A missing file has none; a torn last
// line is skipped.
func EachEvent(dir string, keep func([]byte) bool, fn func(event.Event) error) error {
	return readLines(filepath.Join(dir, EventsFile), func(b []byte) error {
		if keep != nil && !keep(b) {
			return nil
		}
		var e event.Event
		if err := json.Unmarshal(b, &e); err != nil {
			return err
		}
		return fn(e)
	})
}
