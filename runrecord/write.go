package runrecord

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/transcript"
)

// Writer writes a run's record, the folder under the runs dir:
//
//	workflow.yaml      the workflow file's bytes as read (when it came from a file)
//	resolved.json      the workflow as resolved (defaults filled, skills found)
//	journal.jsonl      every generator's transcript, one entry a line, each
//	                   line naming its generator (JournalLine)
//	events.jsonl       every event, one JSON object a line
//	requests.jsonl     what each model call was sent, by reference (Line)
//	board.json         every task with status and result, one a line (after each board run)
//	run.json           status, times, answer or error (Summary, rewritten as the run goes)
//
// The journal is written by one goroutine with group commit
// (journal.Writer); events.jsonl and requests.jsonl are buffered and go
// out with it. JSONL files are only appended and summary files are
// replaced atomically, so a crash leaves at most a torn last line, which
// a resume repairs before appending. One process writes a record at a
// time: it holds the folder's lock (journal.Lock) from Create to Close.
//
// A nil *Writer writes nothing: a run without a runs dir keeps no record.
type Writer struct {
	dir  string
	lock *journal.Locked
	// files are the JSONL files, closed after the journal.
	files []*os.File
	log   *journal.Writer
	// events and requests are events.jsonl and requests.jsonl.
	events, requests *journal.Stream

	mu sync.Mutex
	// blobs are the hashes written to requests.jsonl; ctxHash remembers
	// the hashes of context blocks, toolHashes those of tool definitions.
	blobs      map[string]bool
	ctxHash    map[string]string
	toolHashes map[string]toolKey
	// err is the first failed write of the record; the run fails with it
	// (nothing reports success over a cut record).
	err   error
	onErr func(error)
	// scratch is where request lines are encoded (under mu), evBuf where
	// events are (under evMu): the stream copies them, so each buffer is
	// reused for the next line.
	scratch []byte
	usage   model.Usage // a response line's, while it is written (under mu)
	evMu    sync.Mutex
	evBuf   []byte
}

// WriteOptions configure Create.
type WriteOptions struct {
	// Lock is the folder's lock when the caller holds it already (a
	// resume, which took it to read the journal); nil takes it.
	Lock *journal.Locked
	// FlushDelay bounds how long a line waits in memory before it is
	// written (0: the journal's default).
	FlushDelay time.Duration
	// OnError is told about the first failed write, once, on its own
	// goroutine: a run stops early on it.
	OnError func(error)
	// Redact keeps the secrets of the workflow's transport settings out
	// of the record (see Redact).
	Redact Redact
}

// Create opens the record of run id under runsDir for writing: it makes
// the folder (or, on resume, reopens it and repairs each JSONL file's
// torn last line), takes its lock, and writes the workflow.
//
// J1: the writer holds the run folder's lock from Create to Close.
func Create(runsDir, id string, p *spec.Project, o WriteOptions) (w *Writer, err error) {
	dir := filepath.Join(runsDir, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	lock := o.Lock
	if lock == nil {
		if lock, err = journal.Lock(dir); err != nil {
			return nil, fmt.Errorf("run record: %w", err)
		}
	}
	w = &Writer{dir: dir, lock: lock, blobs: map[string]bool{}, ctxHash: map[string]string{}, toolHashes: map[string]toolKey{}, onErr: o.OnError}
	// An error return sets w to nil before the cleanup runs: it closes
	// what opened holds.
	opened := w
	defer func() {
		if err != nil {
			for _, f := range opened.files {
				f.Close()
			}
			lock.Unlock()
		}
	}()
	if err := w.writeWorkflow(p, o.Redact); err != nil {
		return nil, err
	}
	var jf, ef, qf *os.File
	for _, f := range []struct {
		name string
		f    **os.File
	}{{JournalFile, &jf}, {EventsFile, &ef}, {RequestsFile, &qf}} {
		if *f.f, err = w.openJSONL(f.name); err != nil {
			return nil, err
		}
		w.files = append(w.files, *f.f)
	}
	// The journal's name must survive a machine crash as its lines do.
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	opts := []journal.WriterOption{journal.OnError(func(err error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.fail(fmt.Errorf("run record: %w", err))
	})}
	if o.FlushDelay > 0 {
		opts = append(opts, journal.WithFlushDelay(o.FlushDelay))
	}
	w.log = journal.NewWriter(jf, opts...)
	w.events = w.log.Stream(EventsFile, ef)
	w.requests = w.log.Stream(RequestsFile, qf)
	return w, nil
}

// syncDir makes the names in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

// openJSONL opens a JSONL file of the record for appending, after making
// sure it ends in a whole line.
func (w *Writer) openJSONL(name string) (*os.File, error) {
	path := filepath.Join(w.dir, filepath.FromSlash(name))
	if _, err := journal.RepairTail(path); err != nil {
		return nil, fmt.Errorf("run record: repair %s: %w", name, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	return f, nil
}

// Dir is the record's folder.
func (w *Writer) Dir() string { return w.dir }

// Journal is journal.jsonl: generators append their transcript entries
// to it (each transcript through its own journal.Gen).
func (w *Writer) Journal() journal.Log { return w.log }

// fail keeps the first write error of the record. w.mu is held.
//
// J4: a failed write of the record fails the run.
func (w *Writer) fail(err error) {
	if w.err != nil {
		return
	}
	w.err = err
	if w.onErr != nil {
		go w.onErr(err) // not under w.mu: stopping the run emits events
	}
}

// Err is the first failed write, if any: the record is cut, and whatever
// the run did it is no success.
func (w *Writer) Err() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Sink is events.jsonl as an event sink; nil for a nil Writer. Events are
// buffered and written with the journal's next flush.
func (w *Writer) Sink() event.Sink {
	if w == nil {
		return nil
	}
	return event.SinkFunc(func(e event.Event) {
		w.evMu.Lock()
		defer w.evMu.Unlock()
		b, err := e.AppendJSON(w.evBuf[:0])
		if err != nil {
			w.mu.Lock()
			w.fail(fmt.Errorf("run record: %s: %s event: %w", EventsFile, e.Type, err))
			w.mu.Unlock()
			return
		}
		w.evBuf = b
		// After a failed write the file may end mid-line; the stream
		// takes nothing more, and the journal reported the failure.
		_ = w.events.WriteLine(w.evBuf)
	})
}

// WriteSummary replaces run.json.
func (w *Writer) WriteSummary(s Summary) error { return w.writeJSON(RunFile, s) }

// WriteBoard replaces board.json with tasks, in the board's order. A
// failure also cuts the record (Err): the board is what a resume and
// every reader trust for the tasks' ends.
func (w *Writer) WriteBoard(tasks []board.Task) error {
	if w == nil {
		return nil
	}
	b, err := appendBoard(make([]byte, 0, 256*len(tasks)+64), tasks)
	if err == nil {
		err = w.replace(BoardFile, b)
	} else {
		err = fmt.Errorf("run record %s: %w", BoardFile, err)
	}
	if err != nil {
		w.mu.Lock()
		w.fail(err)
		w.mu.Unlock()
	}
	return err
}

// writeJSON replaces name atomically.
func (w *Writer) writeJSON(name string, v any) error {
	if w == nil {
		return nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("run record %s: %w", name, err)
	}
	return w.replace(name, append(b, '\n'))
}

func (w *Writer) replace(name string, data []byte) error {
	path := filepath.Join(w.dir, name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("run record: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("run record: %w", err)
	}
	return nil
}

// Sent is a model call's request as the record keeps it: the request,
// where its window lies in the generator's transcript, and the stubs
// that replaced the text of reclaimed results (by transcript position).
type Sent struct {
	Request *model.Request
	Window  []transcript.Span
	Stubs   map[int]string
	// Held is what the call reserved of its token budgets; nil when none
	// applies.
	Held *model.Usage
}

// Request writes a request line to requests.jsonl for generator gen,
// preceded by the blobs (context block, tool definitions) the record does
// not hold yet; at is the transcript position its response will take.
// The line is written before the model is called, so a call that hangs or
// crashes the process is still on record. Writes are not synced: the
// transcript's step sync is what resume relies on.
//
// A call that holds a reservation (s.Held) is in the file, not only in
// the buffer, when Request returns, so a killed process cannot lose what
// a resume must count against its budgets.
//
// R8: a call is on record before it is made.
// B6: a reservation is on file before its call is made.
func (w *Writer) Request(gen string, s Sent, at int, now time.Time) {
	if w == nil {
		return
	}
	c := s.Request.Caller
	line := Line{Kind: KindRequest, Gen: gen, Task: c.TaskID, Agent: c.Agent, Step: c.Step,
		Time: now, Window: s.Window, Stubs: s.Stubs, At: at, Held: s.Held}
	if s.Held != nil {
		defer w.flush()
	}
	if ms := s.Request.Messages; len(ms) > 0 && ms[len(ms)-1].Volatile {
		line.Status = ms[len(ms)-1].Text
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	buf := w.scratch[:0]
	line.Context = w.contextHash(s.Request.Context)
	if !w.blobs[line.Context] {
		buf = appendLine(buf, &Line{Kind: KindBlob, Hash: line.Context, Text: &s.Request.Context})
		w.blobs[line.Context] = true
	}
	for _, d := range s.Request.Tools {
		h := w.toolHash(d)
		line.Tools = append(line.Tools, h)
		if !w.blobs[h] {
			buf = appendLine(buf, &Line{Kind: KindBlob, Hash: h,
				Tool: &ToolText{Name: d.Name, Description: d.Description, Parameters: string(d.Parameters)}})
			w.blobs[h] = true
		}
	}
	buf = appendLine(buf, &line)
	w.scratch = buf
	if _, err := w.requests.Write(buf); err != nil {
		w.fail(fmt.Errorf("run record: %s: %w", RequestsFile, err))
	}
}

// flush writes what the record buffered to its files (journal.Writer.Flush).
// A failure is the record's error, as a failed write is.
func (w *Writer) flush() {
	if err := w.log.Flush(); err != nil {
		w.mu.Lock()
		w.fail(fmt.Errorf("run record: %s: %w", RequestsFile, err))
		w.mu.Unlock()
	}
}

// contextHash is TextHash of a context block, remembered: most requests
// of a run carry one of a few blocks. w.mu is held.
func (w *Writer) contextHash(text string) string {
	if h, ok := w.ctxHash[text]; ok {
		return h
	}
	h := TextHash(text)
	if len(w.ctxHash) < 4096 {
		w.ctxHash[text] = h
	}
	return h
}

// toolHash is ToolHash of a tool definition, remembered by name: every
// request of a run offers its tools again, and comparing a definition
// with the one seen costs less than hashing it. w.mu is held.
func (w *Writer) toolHash(d model.ToolDef) string {
	if k, ok := w.toolHashes[d.Name]; ok && k.description == d.Description && bytes.Equal(k.parameters, d.Parameters) {
		return k.hash
	}
	h := ToolHash(d)
	if len(w.toolHashes) < 4096 {
		w.toolHashes[d.Name] = toolKey{d.Description, bytes.Clone(d.Parameters), h}
	}
	return h
}

// toolKey is a tool definition's text and its hash.
type toolKey struct {
	description string
	parameters  []byte
	hash        string
}

// Response writes the response line of a step: its usage, its cost by
// the workflow's prices, the request's o200k counts by part when the
// usage is an estimate (tk), or its error.
func (w *Writer) Response(gen string, c model.Caller, u model.Usage, cost float64, tk *event.Tokens, err error, now time.Time) {
	if w == nil {
		return
	}
	line := Line{Kind: KindResponse, Gen: gen, Task: c.TaskID, Agent: c.Agent, Step: c.Step, Time: now,
		Cost: cost, Tokens: tk}
	if err != nil {
		line.Error = err.Error()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// The line is written before mu is let go: its usage can be the
	// writer's, not a copy of its own on the heap.
	w.usage = u
	line.Usage = &w.usage
	w.scratch = appendLine(w.scratch[:0], &line)
	if _, err := w.requests.Write(w.scratch); err != nil {
		w.fail(fmt.Errorf("run record: %s: %w", RequestsFile, err))
	}
}

// Close commits and flushes everything, syncs the record's files, and
// lets go of the folder.
func (w *Writer) Close() error {
	if w == nil {
		return nil
	}
	first := w.log.Close()
	if first != nil {
		first = fmt.Errorf("run record: %w", first)
	}
	for _, f := range w.files {
		if err := f.Close(); err != nil && first == nil {
			first = fmt.Errorf("run record: %w", err)
		}
	}
	w.files = nil
	if err := w.lock.Unlock(); err != nil && first == nil {
		first = err
	}
	return first
}
