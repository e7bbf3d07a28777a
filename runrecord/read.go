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
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/transcript"
)

// Record is a run record as read from disk.
type Record struct {
	Dir     string
	Summary Summary
	Events  []event.Event
	// Tasks are board.json's tasks, in the board's order.
	Tasks []board.Task
	// Gens are the generators, the host first, then tasks by file name.
	Gens []*Gen
	// byName indexes Gens (built on first use).
	byName map[string]*Gen
}

// Gen is one generator's transcript and the steps it sent.
type Gen struct {
	// Name is its transcript file, relative to the record
	// ("transcript.jsonl", "tasks/t1.jsonl", "tasks/t1.attempt-2.jsonl").
	Name    string
	Task    string // "" for the host
	Agent   string
	Attempt int
	Entries []transcript.Entry
	// Messages are the transcript's messages; positions in requests
	// count them.
	Messages []model.Message
	Steps    []*Step
}

// Step is one model call: the request as the model received it, and what
// came of it.
type Step struct {
	Step    int // 0-based
	Sent    time.Time
	Done    time.Time // zero while the call is in flight or was lost
	Request *model.Request
	Tokens  *event.Tokens
	Usage   *model.Usage
	Cost    float64 // Usage priced by the workflow's prices (0: none)
	Error   string
	// Response is the messages the step added: the model's message, then
	// the results of its calls (and, for the host, worker items that
	// follow a runBoard result).
	Response []model.Message
	// At is the transcript position of Response's first message.
	At int
	// Reconstructed: the request is not on record (the task ran on a
	// remote worker); Request holds the transcript's messages before the
	// step, no context block and no tools.
	Reconstructed bool
}

// ErrNoRecord is wrapped when a folder holds no run record.
var ErrNoRecord = errors.New("no run record")

// Open reads the record in dir, its Summary's status Current. A torn
// last line (a crash mid-write, or a run still writing) is skipped;
// anything else malformed is an error.
func Open(dir string) (*Record, error) { return open(dir, nil) }

// OpenTask reads of the record in dir only what the generators of task
// need (and, with host, the host's): the Summary, the task's events,
// board entry, transcripts and requests, and the blobs those requests
// name. A line that does not hold the task's id, quoted, is skipped
// before it is decoded, so a reader of one task of a large run keeps
// that task in memory, not the run. Gens holds the task's generators
// (and the host's) only.
//
// G20: one task's read decodes only the lines that may be about it.
func OpenTask(dir, task string, host bool) (*Record, error) {
	return open(dir, newOnly(task, host))
}

// only picks one task's (and perhaps the host's) lines out of a record.
type only struct {
	task string
	host bool
	// quoted is the task id as a JSON string, as every encoder writes
	// it; nil when the id holds a byte an encoder may escape, and then
	// every line is decoded.
	quoted []byte
	// gens are the request lines' generator names the reader keeps,
	// each a prefix up to the attempt suffix (`"tasks/t1.`), or the
	// host's whole name.
	gens [][]byte
}

func newOnly(task string, host bool) *only {
	o := &only{task: task, host: host}
	plain := task != ""
	for i := 0; i < len(task); i++ {
		if c := task[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			plain = false
		}
	}
	if plain {
		o.quoted = []byte(`"` + task + `"`)
	}
	if task != "" {
		o.gens = append(o.gens, []byte(`"`+TasksDir+"/"+FileName(task)+"."))
	}
	if host {
		o.gens = append(o.gens, []byte(`"`+HostFile+`"`))
	}
	return o
}

// mayHold is false when line cannot be one of the task's (or, with host,
// any line with no task), judged from its bytes alone.
func (o *only) mayHold(line []byte) bool {
	return o == nil || o.host || o.quoted == nil || bytes.Contains(line, o.quoted)
}

// keeps is whether the reader keeps the generator of task.
func (o *only) keeps(task string) bool {
	return o == nil || task == o.task && task != "" || o.host && task == ""
}

// mayBeGen is false when a request line cannot be of a generator kept.
func (o *only) mayBeGen(line []byte) bool {
	if o == nil {
		return true
	}
	for _, g := range o.gens {
		if bytes.Contains(line, g) {
			return true
		}
	}
	return false
}

func open(dir string, o *only) (*Record, error) {
	rec := &Record{Dir: dir}
	var err error
	if rec.Summary, err = readCurrent(dir); err != nil {
		return nil, err
	}
	if err := readLines(filepath.Join(dir, EventsFile), func(b []byte) error {
		if !o.mayHold(b) {
			return nil
		}
		var e event.Event
		if err := json.Unmarshal(b, &e); err != nil {
			return err
		}
		if o != nil && e.Task != o.task {
			return nil
		}
		rec.Events = append(rec.Events, e)
		return nil
	}); err != nil {
		return nil, err
	}
	if rec.Tasks, err = ReadBoard(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if o != nil {
		rec.Tasks = slices.DeleteFunc(rec.Tasks, func(t board.Task) bool { return t.ID != o.task })
	}
	if err := rec.readGens(o); err != nil {
		return nil, err
	}
	if err := rec.readRequests(o); err != nil {
		return nil, err
	}
	rec.transcriptSteps()
	return rec, nil
}

// readCurrent reads run.json of the record in dir, its status where the
// run is now, not where run.json last said, and a live run's usage so
// far.
func readCurrent(dir string) (Summary, error) {
	s, err := currentSummary(dir)
	if err == nil && s.Status.Live() {
		liveUsage(dir, &s)
	}
	return s, err
}

// currentSummary is run.json with its Current status.
func currentSummary(dir string) (Summary, error) {
	s, err := ReadSummary(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Summary{}, fmt.Errorf("%w in %s", ErrNoRecord, dir)
		}
		return Summary{}, err
	}
	s.Status = Current(dir, s)
	return s, nil
}

// readGens reads every generator's entries from the journal, or, in a
// record made before the journal, from its transcript files.
func (rec *Record) readGens(o *only) error {
	path := filepath.Join(rec.Dir, JournalFile)
	if _, err := os.Stat(path); err != nil {
		return rec.readTranscriptFiles(o)
	}
	var keep func([]byte) bool
	if o != nil {
		keep = o.mayHold
	}
	gens, err := readJournal(path, keep)
	if err != nil && !errors.Is(err, transcript.ErrTornTail) {
		return err
	}
	// The host first, then tasks by name, as the files were listed.
	sort.SliceStable(gens, func(i, j int) bool {
		if (gens[i].Gen.Task == "") != (gens[j].Gen.Task == "") {
			return gens[i].Gen.Task == ""
		}
		return gens[i].Name < gens[j].Name
	})
	for _, ge := range gens {
		if !o.keeps(ge.Gen.Task) {
			continue
		}
		g := &Gen{Name: ge.Name, Task: ge.Gen.Task, Attempt: max(ge.Gen.Attempt, 1), Entries: ge.Entries}
		// Context lines enter the message sequence where the transcript
		// put them: positions in requests count them.
		if g.Messages, err = transcript.Rebuild(ge.Entries); err != nil {
			return fmt.Errorf("%s: %s: %w", path, ge.Name, err)
		}
		rec.Gens = append(rec.Gens, g)
	}
	return nil
}

// readTranscriptFiles reads the transcript files of an older record.
func (rec *Record) readTranscriptFiles(o *only) error {
	files, _ := filepath.Glob(filepath.Join(rec.Dir, TasksDir, "*.jsonl"))
	sort.Strings(files)
	files = append([]string{filepath.Join(rec.Dir, HostFile)}, files...)
	for _, f := range files {
		entries, err := transcript.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil && !errors.Is(err, transcript.ErrTornTail) {
			return err
		}
		rel, _ := filepath.Rel(rec.Dir, f)
		g := &Gen{Name: filepath.ToSlash(rel), Entries: entries, Attempt: 1}
		if g.Name != HostFile {
			file := strings.TrimSuffix(strings.TrimPrefix(g.Name, TasksDir+"/"), ".jsonl")
			if base, n, ok := strings.Cut(file, ".attempt-"); ok {
				if a, err := strconv.Atoi(n); err == nil {
					file, g.Attempt = base, a
				}
			}
			// The request lines name the task; until one is read, the
			// file name does (ids are encoded injectively into it).
			g.Task = taskOfFile(file)
		}
		if !o.keeps(g.Task) {
			continue
		}
		if g.Messages, err = transcript.Rebuild(entries); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		rec.Gens = append(rec.Gens, g)
	}
	return nil
}

// Gen returns the generator whose transcript file is name.
func (rec *Record) Gen(name string) *Gen {
	if len(rec.byName) != len(rec.Gens) {
		rec.byName = make(map[string]*Gen, len(rec.Gens))
		for _, g := range rec.Gens {
			rec.byName[g.Name] = g
		}
	}
	return rec.byName[name]
}

func (rec *Record) readRequests(o *only) error {
	path := filepath.Join(rec.Dir, RequestsFile)
	blobs := map[string]Line{}
	var want map[string]bool // the blobs the kept requests name
	if o != nil {
		var err error
		if want, err = wantedBlobs(path, o); err != nil {
			return err
		}
	}
	err := readLines(path, func(b []byte) error {
		if o != nil && !o.mayBeGen(b) && !mayBeBlob(b, want) {
			return nil
		}
		var l Line
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		if l.Kind == KindBlob {
			if want == nil || want[l.Hash] {
				blobs[l.Hash] = l
			}
			return nil
		}
		if l.Kind == KindRequest && o != nil && !o.keeps(l.Task) {
			return nil
		}
		g := rec.Gen(l.Gen)
		if g == nil {
			if l.Kind == KindRequest {
				return fmt.Errorf("request of %s, which has no transcript", l.Gen)
			}
			return nil
		}
		return g.apply(l, func(h string) (Line, bool) { b, ok := blobs[h]; return b, ok })
	})
	if err != nil {
		return err
	}
	for _, g := range rec.Gens {
		g.respond()
	}
	return nil
}

// apply adds a request line to g as a step, its request rebuilt from
// the transcript and the blobs, or a response line to its step.
func (g *Gen) apply(l Line, blob func(string) (Line, bool)) error {
	switch l.Kind {
	case KindRequest:
		st, err := rebuild(g, l, blob)
		if err != nil {
			return err
		}
		g.Task, g.Agent = l.Task, l.Agent
		g.Steps = append(g.Steps, st)
	case KindResponse:
		for i := len(g.Steps) - 1; i >= 0; i-- {
			if st := g.Steps[i]; st.Step == l.Step {
				st.Done, st.Usage, st.Cost, st.Error = l.Time, l.Usage, l.Cost, l.Error
				if l.Tokens != nil {
					st.Tokens = l.Tokens // an estimate's counts by part
				}
				break
			}
		}
	}
	return nil
}

// respond gives each step the messages it added: from its At to the
// next step's.
func (g *Gen) respond() {
	for i, st := range g.Steps {
		end := len(g.Messages)
		if i+1 < len(g.Steps) {
			end = g.Steps[i+1].At
		}
		if st.At <= end && end <= len(g.Messages) {
			st.Response = g.Messages[st.At:end]
		}
	}
}

// wantedBlobs is the hashes of the blobs the request lines of o's
// generators name.
func wantedBlobs(path string, o *only) (map[string]bool, error) {
	want := map[string]bool{}
	err := readLines(path, func(b []byte) error {
		if !o.mayBeGen(b) {
			return nil
		}
		var l struct {
			Kind    string   `json:"kind"`
			Task    string   `json:"task"`
			Context string   `json:"context"`
			Tools   []string `json:"tools"`
		}
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		if l.Kind == KindRequest && o.keeps(l.Task) {
			want[l.Context] = true
			for _, h := range l.Tools {
				want[h] = true
			}
		}
		return nil
	})
	return want, err
}

// mayBeBlob is false when line cannot be a blob of want: the value of
// its first "hash" key (hex, never escaped) is none of theirs.
func mayBeBlob(line []byte, want map[string]bool) bool {
	_, after, ok := bytes.Cut(line, []byte(`"hash":"`))
	if !ok {
		return false
	}
	h, _, ok := bytes.Cut(after, []byte(`"`))
	return ok && want[string(h)]
}

// rebuild makes the request of a request line from the transcript and
// the blobs.
//
// R8: the request rebuilt byte for byte.
func rebuild(g *Gen, l Line, blob func(string) (Line, bool)) (*Step, error) {
	where := fmt.Sprintf("%s step %d", l.Gen, l.Step+1)
	ctx, ok := blob(l.Context)
	if !ok || ctx.Text == nil {
		return nil, fmt.Errorf("%s: context block %s is not in the record", where, l.Context)
	}
	req := &model.Request{Context: *ctx.Text, Caller: model.Caller{Agent: l.Agent, TaskID: l.Task, Step: l.Step}}
	for _, h := range l.Tools {
		t, ok := blob(h)
		if !ok || t.Tool == nil {
			return nil, fmt.Errorf("%s: tool %s is not in the record", where, h)
		}
		req.Tools = append(req.Tools, t.Tool.Def())
	}
	for _, sp := range l.Window {
		if sp.From < 0 || sp.From > sp.To || sp.To > len(g.Messages) {
			return nil, fmt.Errorf("%s: window [%d, %d) is outside the transcript's %d messages", where, sp.From, sp.To, len(g.Messages))
		}
		for pos := sp.From; pos < sp.To; pos++ {
			m := g.Messages[pos]
			if stub, ok := l.Stubs[pos]; ok {
				m.Text = stub
			}
			req.Messages = append(req.Messages, m)
		}
	}
	if l.Status != "" {
		req.Messages = append(req.Messages, model.Message{Role: model.Context, Text: l.Status, Volatile: true})
	}
	return &Step{Step: l.Step, Sent: l.Time, Request: req, Tokens: l.Tokens, At: l.At}, nil
}

// readLines calls fn with each non-blank line of a JSON-lines file. A
// missing file is no lines; a torn last line is skipped.
func readLines(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if err == io.EOF {
			return nil // a torn or empty tail: the run may still be writing it
		}
		if t := bytes.TrimSpace(b); len(t) > 0 {
			if ferr := fn(t); ferr != nil {
				return fmt.Errorf("%s:%d: %w", path, line, ferr)
			}
		}
	}
}

// ReadBoard reads board.json of the record in dir: every task, in the
// board's order. A run that never ran a board has none (an error wrapping
// os.ErrNotExist).
func ReadBoard(dir string) ([]board.Task, error) {
	path := filepath.Join(dir, BoardFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var bj struct {
		Tasks []board.Task `json:"tasks"`
	}
	if err := json.Unmarshal(b, &bj); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return bj.Tasks, nil
}

// ReadSummary reads run.json of the record in dir. A missing file is an
// error wrapping os.ErrNotExist; one that does not decode names the file.
func ReadSummary(dir string) (Summary, error) {
	path := filepath.Join(dir, RunFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return Summary{}, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return Summary{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Responses calls fn with each response line of requests.jsonl in dir,
// one per model call, and each request line that held a reservation
// (Line.Held), in order; the rest of the file (blobs, other requests) is
// not decoded. A torn or unreadable line is skipped: it is one call's
// figures at most. The error is the file's (os.ErrNotExist when there is
// none).
func Responses(dir string, fn func(Line)) error {
	f, err := os.Open(filepath.Join(dir, RequestsFile))
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		b := sc.Bytes()
		held := bytes.HasPrefix(b, []byte(`{"kind":"`+KindRequest+`"`)) && bytes.Contains(b, []byte(`,"held":{`))
		if !held && !bytes.Contains(b, []byte(`"kind":"`+KindResponse+`"`)) {
			continue // blobs and requests: most of the file, not parsed
		}
		var l Line
		if json.Unmarshal(b, &l) != nil || (l.Kind != KindResponse && (l.Kind != KindRequest || l.Held == nil)) {
			continue
		}
		fn(l)
	}
	return sc.Err()
}

// List reads every run under runsDir with ReadRun, newest first: each
// with its Current status, the incomplete ones too. A run.json that does
// not decode is skipped (Scan says which).
func List(runsDir string) ([]Summary, error) {
	sums, _, err := Scan(runsDir)
	return sums, err
}

// Scan is List, and the errors of the runs whose run.json could not be
// read or decoded, so a listing can say so instead of hiding a damaged
// record.
func Scan(runsDir string) (sums []Summary, damaged []error, err error) {
	entries, err := os.ReadDir(runsDir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		if !isListed(e) {
			continue
		}
		s, err := ReadRun(filepath.Join(runsDir, e.Name()))
		switch {
		case err == nil:
			sums = append(sums, s)
		case !errors.Is(err, os.ErrNotExist):
			damaged = append(damaged, err)
		}
	}
	sort.SliceStable(sums, func(i, j int) bool { return sums[i].Started.After(sums[j].Started) })
	return sums, damaged, nil
}

// taskOfFile decodes a task file name: every byte other than a-z, 0-9
// and - was written as _ and two hex digits. A name cut short with a
// hash (a very long id) is returned as it is.
func taskOfFile(name string) string {
	if strings.Contains(name, "~") {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] == '_' && i+2 < len(name) {
			if v, err := strconv.ParseUint(name[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(name[i])
	}
	return b.String()
}
