package runrecord

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/transcript"
)

// Stream reads a record one generator at a time, for readers that print
// a whole run (fsd show --requests, fsd report, fsd ui's pages): opening
// it indexes where each generator's lines are — a few offsets a line, no
// line kept — and Read decodes one generator's transcript and requests
// when asked, so what a reader holds is one generator, not the run.
// Refresh brings the index up to date with a record that grew, reading
// only what was appended since, so a reader that keeps a Stream between
// reads of a live run pays for what is new.
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
	// jAt and rAt are where the index of each file stopped: after its
	// last whole line.
	jAt, rAt cursor
	byName   map[string]int // index in Gens by name
	// torn names the generator whose last journal span is the file's
	// torn last line: the next Refresh drops it and reads it again.
	torn string
	// live: the run may still write; its journal may lag its requests.
	live   bool
	usage  model.Usage // of every response indexed, for a live run's summary
	cost   float64
	blobs  map[string]span
	agentN map[string]string // one copy of each agent's name
	// cache keeps the blobs read lately: a run's tools are the same few
	// blobs for every task.
	cache  map[string]Line
	agents map[string]string // board agents of the generators without requests
	buf    []byte
}

// cursor is how far a file has been indexed.
type cursor struct {
	off  int64
	line int
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

	// spans are its journal lines (none for a transcript file) and its
	// request and response lines, each file's in order.
	spans []span
}

// span is where a line is in its file: 16 bytes, since a large run's
// index holds a few a generator.
type span struct {
	off int64
	n   int32
	// meta packs the line's step (of a request or response), where it
	// is and what it is: see the span flags.
	meta uint32
}

const (
	// spanTorn: the file's last line has no newline (a run mid-write),
	// skipped when it does not decode.
	spanTorn = 1 << iota
	// spanResp: a response line, not a request.
	spanResp
	// spanReq: a line of requests.jsonl, not of the journal.
	spanReq
	spanStep = 3 // the step is meta >> spanStep
)

func (sp span) torn() bool  { return sp.meta&spanTorn != 0 }
func (sp span) resp() bool  { return sp.meta&spanResp != 0 }
func (sp span) req() bool   { return sp.meta&spanReq != 0 }
func (sp span) step() int32 { return int32(sp.meta >> spanStep) }

// StepCount is how many of g's request lines are of step n (1-based),
// or all of them for n 0.
func (g *GenInfo) StepCount(n int) int {
	if n == 0 {
		return g.Requests
	}
	c := 0
	for _, s := range g.spans {
		if s.req() && !s.resp() && s.step() == int32(n-1) {
			c++
		}
	}
	return c
}

// OpenStream indexes the record in dir. Close it when done.
func OpenStream(dir string) (*Stream, error) {
	s := &Stream{Dir: dir}
	if err := s.Refresh(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Refresh reads the run's summary again and indexes what the record's
// files gained since the last index: of a file that grew, the lines
// after those indexed; a file that was replaced or cut (a resumed run
// may rewrite a torn tail) is indexed again whole, with the rest of the
// record. Afterwards the Stream is what OpenStream would open now.
//
// G9: a kept Stream, refreshed, reads what a Stream opened then reads.
func (s *Stream) Refresh() error {
	sum, err := currentSummary(s.Dir)
	if err != nil {
		return err
	}
	if s.byName == nil || s.journal == nil || s.replaced(s.journal, JournalFile, s.jAt) || s.replaced(s.requests, RequestsFile, s.rAt) {
		s.reset()
	}
	if s.torn != "" {
		g := &s.Gens[s.byName[s.torn]]
		g.spans = slices.DeleteFunc(g.spans, span.torn)
		s.torn = ""
	}
	n, resort := len(s.Gens), false
	s.live = sum.Status.Live()
	if err := s.indexGens(); err != nil {
		return err
	}
	if err := s.indexRequests(&resort); err != nil {
		return err
	}
	if len(s.Gens) > n || resort {
		s.sort(n, resort)
	}
	s.agents = nil // the board and the generators without requests may have changed
	if sum.Status.Live() {
		// As liveUsage has it: what the calls used so far, when run.json
		// does not have it yet.
		if int64(s.usage.InputTokens+s.usage.OutputTokens) > sum.InputTokens+sum.OutputTokens {
			sum.SetUsage(s.usage)
			sum.Cost = s.cost
		}
	}
	s.Summary = sum
	return nil
}

// replaced says whether the file at name is no longer f, or is shorter
// than where its index stopped; f nil: whether the file now exists.
func (s *Stream) replaced(f *os.File, name string, at cursor) bool {
	fi, err := os.Stat(filepath.Join(s.Dir, name))
	if f == nil {
		return err == nil
	}
	if err != nil {
		return true
	}
	ffi, ferr := f.Stat()
	return ferr != nil || !os.SameFile(fi, ffi) || fi.Size() < at.off
}

// reset forgets the index, to index the record again whole.
func (s *Stream) reset() {
	s.Close()
	*s = Stream{Dir: s.Dir, byName: map[string]int{}, blobs: map[string]span{}, cache: s.cache, agentN: map[string]string{}, buf: s.buf}
	if s.cache == nil {
		s.cache = map[string]Line{} // a blob's hash names its content: still right
	}
}

// gen is the generator of name, added when it is new.
func (s *Stream) gen(name, task string, attempt int) *GenInfo {
	i, ok := s.byName[name]
	if !ok {
		// A task's name holds its id when the id is a plain one: the
		// index keeps one string for both.
		if rest, ok := strings.CutPrefix(name, TasksDir+"/"); ok && strings.HasPrefix(rest, task) && task != "" {
			task = rest[:len(task)]
		}
		i = len(s.Gens)
		s.byName[name] = i
		s.Gens = append(s.Gens, GenInfo{Name: name, Task: task, Attempt: max(attempt, 1)})
	}
	return &s.Gens[i]
}

// sort puts the generators back in Record.Gens's order, the host first
// then tasks by name, after the index added those from n on: those are
// sorted and merged in (or all are, when resort says an old one's task
// changed).
func (s *Stream) sort(n int, resort bool) {
	less := func(a, b GenInfo) int {
		if (a.Task == "") != (b.Task == "") {
			if a.Task == "" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	}
	if resort || n == 0 {
		slices.SortStableFunc(s.Gens, less)
	} else {
		added := s.Gens[n:]
		slices.SortStableFunc(added, less)
		if less(s.Gens[n-1], added[0]) > 0 {
			merged := make([]GenInfo, 0, cap(s.Gens))
			old := s.Gens[:n]
			for len(old) > 0 && len(added) > 0 {
				if less(added[0], old[0]) < 0 {
					merged, added = append(merged, added[0]), added[1:]
				} else {
					merged, old = append(merged, old[0]), old[1:]
				}
			}
			s.Gens = append(append(merged, old...), added...)
		}
	}
	for i, g := range s.Gens {
		s.byName[g.Name] = i
	}
}

// Close closes the record's files.
func (s *Stream) Close() error {
	var err error
	for _, f := range []*os.File{s.journal, s.requests} {
		if f != nil {
			err = errors.Join(err, f.Close())
		}
	}
	s.journal, s.requests = nil, nil
	return err
}

// indexGens finds each generator's journal lines after those indexed,
// or in a record made before the journal, its transcript files.
func (s *Stream) indexGens() error {
	path := filepath.Join(s.Dir, JournalFile)
	if s.journal == nil {
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			return s.indexTranscriptFiles()
		}
		if err != nil {
			return err
		}
		s.journal = f
	}
	return eachLine(s.journal, path, &s.jAt, true, func(b []byte, sp span) error {
		h, ok := journalHead(b)
		if !ok {
			if sp.torn() {
				return nil // a torn tail: readJournal stops there too
			}
			return errors.New("not a journal line")
		}
		g := h.Generator()
		name := GenName(g)
		ge := s.gen(name, g.Task, g.Attempt)
		ge.spans = append(ge.spans, sp)
		if sp.torn() {
			s.torn = name
		}
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
func (s *Stream) indexTranscriptFiles() error {
	files, _ := filepath.Glob(filepath.Join(s.Dir, TasksDir, "*.jsonl"))
	sort.Strings(files)
	if _, err := os.Stat(filepath.Join(s.Dir, HostFile)); err == nil {
		files = append([]string{filepath.Join(s.Dir, HostFile)}, files...)
	}
	for _, f := range files {
		rel, _ := filepath.Rel(s.Dir, f)
		name := filepath.ToSlash(rel)
		if name == HostFile {
			s.gen(name, "", 1)
			continue
		}
		file := strings.TrimSuffix(strings.TrimPrefix(name, TasksDir+"/"), ".jsonl")
		attempt := 1
		if base, n, ok := strings.Cut(file, ".attempt-"); ok {
			if a, err := strconv.Atoi(n); err == nil {
				file, attempt = base, a
			}
		}
		s.gen(name, taskOfFile(file), attempt)
	}
	return nil
}

// indexRequests finds each generator's request and response lines and
// each blob after those indexed, and adds up each generator's usage as
// Read would attach it. resort is set when a request names a task its
// generator did not have.
func (s *Stream) indexRequests(resort *bool) error {
	path := filepath.Join(s.Dir, RequestsFile)
	if s.requests == nil {
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		s.requests = f
	}
	return eachLine(s.requests, path, &s.rAt, false, func(b []byte, sp span) error {
		sp.meta |= spanReq
		if rest, ok := bytes.CutPrefix(b, []byte(`{"kind":"blob","hash":"`)); ok {
			if h, _, ok := bytes.Cut(rest, []byte(`"`)); ok {
				s.blobs[string(h)] = sp
				return nil
			}
		}
		l, ok := callHead(b)
		if !ok {
			l = lineHead{}
			if err := json.Unmarshal(b, &l); err != nil {
				return err
			}
		}
		sp.meta |= uint32(l.Step) << spanStep
		switch l.Kind {
		case KindBlob:
			s.blobs[l.Hash] = sp
		case KindRequest:
			i, ok := s.byName[l.Gen]
			if !ok && s.live {
				// A running run's journal may not have the generator's
				// first entry yet: the index stops here until it does.
				return errWait
			}
			if !ok {
				return fmt.Errorf("request of %s, which has no transcript", l.Gen)
			}
			g := &s.Gens[i]
			if g.Task != l.Task {
				*resort = true // the generator's place may change
				g.Task = l.Task
			}
			g.Agent = s.agentName(l.Agent)
			g.Requests++
			g.spans = append(g.spans, sp)
		case KindResponse:
			if l.Usage != nil {
				s.usage = s.usage.Add(*l.Usage)
			}
			s.cost += l.Cost
			i, ok := s.byName[l.Gen]
			if !ok {
				return nil
			}
			g := &s.Gens[i]
			// Read attaches a response to its step's request, the last
			// one of that step; one with none is dropped.
			for i := len(g.spans) - 1; i >= 0 && l.Usage != nil; i-- {
				if r := g.spans[i]; r.req() && !r.resp() && r.step() == sp.step() {
					g.In += l.Usage.InputTokens
					g.Out += l.Usage.OutputTokens
					break
				}
			}
			sp.meta |= spanResp
			g.spans = append(g.spans, sp)
		}
		return nil
	})
}

// lineHead is what the index needs of a requests.jsonl line.
type lineHead struct {
	Kind  string       `json:"kind"`
	Hash  string       `json:"hash"`
	Gen   string       `json:"gen"`
	Task  string       `json:"task"`
	Agent string       `json:"agent"`
	Step  int          `json:"step"`
	Usage *model.Usage `json:"usage"`
	Cost  float64      `json:"cost"`
}

// callHead reads the head of a request or response line from its bytes
// when they are as appendLineJSON writes them — kind, gen, task, agent
// and step first, unescaped; a response's usage and cost the only keys
// of those names (no value the line holds is an object with such a key)
// — and says false otherwise, for the line to be decoded.
func callHead(b []byte) (lineHead, bool) {
	var l lineHead
	rest, ok := bytes.CutPrefix(b, []byte(`{"kind":"`))
	if !ok {
		return l, false
	}
	str := func(key string) (string, bool) {
		r, ok := bytes.CutPrefix(rest, []byte(`,"`+key+`":"`))
		if !ok {
			return "", true // omitted: empty
		}
		v, after, ok := bytes.Cut(r, []byte(`"`))
		if !ok || bytes.IndexByte(v, '\\') >= 0 {
			return "", false
		}
		rest = after
		return string(v), true
	}
	var kind []byte
	if kind, rest, ok = bytes.Cut(rest, []byte(`"`)); !ok {
		return l, false
	}
	switch string(kind) {
	case KindRequest:
		l.Kind = KindRequest
	case KindResponse:
		l.Kind = KindResponse
	default:
		return l, false
	}
	okGen, okTask, okAgent := false, false, false
	l.Gen, okGen = str("gen")
	l.Task, okTask = str("task")
	l.Agent, okAgent = str("agent")
	if !okGen || !okTask || !okAgent {
		return l, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"step":`)); !ok {
		return l, false
	}
	end := bytes.IndexAny(rest, ",}")
	n, err := strconv.Atoi(string(rest[:max(end, 0)]))
	if end < 0 || err != nil {
		return l, false
	}
	l.Step, rest = n, rest[end:]
	if l.Kind == KindRequest {
		return l, true
	}
	if _, u, ok := bytes.Cut(rest, []byte(`,"usage":`)); ok {
		end := bytes.IndexByte(u, '}') // a usage holds no object
		l.Usage = new(model.Usage)
		if end < 0 || json.Unmarshal(u[:end+1], l.Usage) != nil {
			return l, false
		}
	}
	if _, c, ok := bytes.Cut(rest, []byte(`,"cost":`)); ok {
		end := bytes.IndexAny(c, ",}")
		f, err := strconv.ParseFloat(string(c[:max(end, 0)]), 64)
		if end < 0 || err != nil {
			return l, false
		}
		l.Cost = f
	}
	return l, true
}

// agentName is one copy of an agent's name for every generator of it.
func (s *Stream) agentName(a string) string {
	if c, ok := s.agentN[a]; ok {
		return c
	}
	s.agentN[a] = a
	return a
}

// errWait stops eachLine before a line fn cannot index yet.
var errWait = errors.New("not yet")

// eachLine calls fn with each non-blank line of f from at on and where
// it is, moving at past each whole line. The last line without a newline
// is passed, marked torn, when tail is set, and skipped otherwise
// (readLines skips it, readJournal tries it); at stays before it, and
// before a line fn returns errWait for, where the reading stops.
func eachLine(f *os.File, path string, at *cursor, tail bool, fn func([]byte, span) error) error {
	br := bufio.NewReaderSize(io.NewSectionReader(f, at.off, math.MaxInt64-at.off), 64<<10)
	for {
		b, err := readLine(br)
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s:%d: %w", path, at.line+1, err)
		}
		torn := err == io.EOF
		if torn && !tail {
			return nil
		}
		if t := bytes.TrimSpace(b); len(t) > 0 {
			sp := span{off: at.off, n: int32(len(b))}
			if torn {
				sp.meta = spanTorn
			}
			if ferr := fn(t, sp); errors.Is(ferr, errWait) {
				return nil
			} else if ferr != nil {
				return fmt.Errorf("%s:%d: %w", path, at.line+1, ferr)
			}
		}
		if torn {
			return nil
		}
		at.off += int64(len(b))
		at.line++
	}
}

// line reads the line at sp of f into the stream's buffer.
func (s *Stream) line(f *os.File, sp span) ([]byte, error) {
	return readAt(f, sp.off, int(sp.n), &s.buf)
}

// readAt reads the n bytes at off of f into *buf, trimmed of space.
func readAt(f *os.File, off int64, n int, buf *[]byte) ([]byte, error) {
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	if k, err := f.ReadAt(b, off); k < n {
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
		for _, sp := range gi.spans {
			if sp.req() {
				continue
			}
			b, err := s.line(s.journal, sp)
			if err != nil {
				return nil, err
			}
			var l JournalLine
			if err := json.Unmarshal(b, &l); err != nil {
				if sp.torn() {
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
	for _, sp := range gi.spans {
		if !sp.req() {
			continue
		}
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
	return eachBoardValue(f, path, func(dec *json.Decoder) error {
		var task board.Task
		if err := dec.Decode(&task); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return fn(&task)
	})
}

// eachBoardValue calls fn with a decoder at each task of the board.json
// in f, which decodes it (and says the path in an error of its decoding).
func eachBoardValue(f io.Reader, path string, fn func(*json.Decoder) error) error {
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
			if err := fn(dec); err != nil {
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
