package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
)

// Gen names the generator a journal line belongs to: the run's host, or
// one attempt of a task.
type Gen struct {
	Task    string // "" for the host
	Attempt int    // a task's attempt, from 1
}

// Host is the host generator's Gen.
var Host = Gen{}

// Head is the leading fields of a journal line, which name its
// generator: {"gen":"host",…} or {"gen":"task","task":"t1","attempt":2,…}.
// Decode a line into a struct that embeds Head to read both the generator
// and the entry in one pass.
type Head struct {
	Gen     string `json:"gen"`
	Task    string `json:"task,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
}

// Generator is the Gen the line names.
func (h Head) Generator() Gen {
	if h.Gen != "task" {
		return Host
	}
	return Gen{Task: h.Task, Attempt: max(h.Attempt, 1)}
}

// appendPrefix appends the start of every line of g: `{"gen":…,` up to
// the entry's own fields.
func (g Gen) appendPrefix(b []byte) []byte {
	if g.Task == "" {
		return append(b, `{"gen":"host",`...)
	}
	b = append(b, `{"gen":"task","task":`...)
	if plainJSON(g.Task) {
		b = append(append(append(b, '"'), g.Task...), '"')
	} else {
		id, _ := json.Marshal(g.Task) // a string always marshals
		b = append(b, id...)
	}
	b = strconv.AppendInt(append(b, `,"attempt":`...), int64(max(g.Attempt, 1)), 10)
	return append(b, ',')
}

// plainJSON reports whether s is its own JSON string body: printable
// ASCII that json.Marshal leaves as it is (task ids usually are).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// Mark is a position in a journal: the lines appended up to and
// including one Append. Wait(m) returns once they are all durable.
type Mark uint64

// Log is a run's journal as its generators see it. Append puts an entry
// (one JSON object) of generator g after every line appended before it;
// Wait returns once the commit covering m is durable, or with the error
// that stopped the journal. A line is never durable before a line
// appended before it. Writer is the Log of a local file; a log kept
// elsewhere (a stream server) can serve the same two calls.
type Log interface {
	Append(g Gen, entry []byte) (Mark, error)
	Wait(m Mark) error
}

// Writer is the journal of one run: an append-only file written by one
// goroutine with group commit. Generators Append and go on; whoever needs
// a line on disk Waits for its Mark, and one fdatasync covers every line
// appended before it started, so concurrent waiters share a commit.
// Lines are written to the file (where a killed process cannot lose them)
// at each commit and at most FlushDelay after they were appended; only a
// Wait asks for an fdatasync.
//
// Streams are other files of the run written with the journal (the event
// stream, the request log): buffered, and flushed at each commit before
// the journal's lines, never synced but by Close.
type Writer struct {
	f     *os.File
	delay time.Duration
	onErr func(error)
	sync  func(*os.File) error // fdatasync; tests watch and hold commits through it

	mu       sync.Mutex
	durable  *sync.Cond // broadcast at the end of each round
	buf      []byte     // journal bytes not yet written
	streams  []*Stream
	appended Mark        // lines appended
	written  Mark        // lines written to the file
	synced   Mark        // lines durable
	wanted   Mark        // the highest Mark a Wait asked for
	armed    bool        // a lazy flush is scheduled
	timer    *time.Timer // the lazy flush's, made once and reset
	closing  bool
	err      error
	stats    Stats
	// begun and ended count the rounds that took the buffers and the
	// rounds that wrote them; stopped is set when the goroutine ends.
	begun, ended uint64
	stopped      bool

	wake chan struct{} // cap 1: something to do now
	done chan struct{} // closed when the goroutine ends
}

// Stats count what a Writer did, for benchmarks and tests.
type Stats struct {
	Lines   int // journal lines appended
	Writes  int // write calls to the journal file
	Commits int // fdatasync calls that succeeded: one per group commit
}

// FlushDelay is how long an appended line or stream write may wait in
// memory when nobody waits for it.
const FlushDelay = 20 * time.Millisecond

// flushSize is how many bytes of the journal or of a stream wait for a
// flush before the writer goes without waiting for FlushDelay: a large
// run's buffers stay this size, reused, instead of growing to what the
// run writes in FlushDelay.
//
// F2: a buffer that reaches it is written at once.
const flushSize = 64 << 10

// WriterOption configures a Writer.
type WriterOption func(*Writer)

// OnError is told about the first failed write or sync, once, from the
// writer's goroutine.
func OnError(fn func(error)) WriterOption { return func(w *Writer) { w.onErr = fn } }

// WithFlushDelay sets how late an unwaited line is written (FlushDelay).
func WithFlushDelay(d time.Duration) WriterOption { return func(w *Writer) { w.delay = d } }

// NewWriter starts the journal writer of f, an append-only file that ends
// in a whole line (RepairTail). The caller owns f and closes it after
// Close.
func NewWriter(f *os.File, opts ...WriterOption) *Writer {
	w := &Writer{f: f, delay: FlushDelay, sync: fdatasync, wake: make(chan struct{}, 1), done: make(chan struct{})}
	for _, o := range opts {
		o(w)
	}
	w.durable = sync.NewCond(&w.mu)
	go w.run()
	return w
}

// ErrClosed is returned by appends and waits after Close.
var ErrClosed = errors.New("journal closed")

// Append adds one line of generator g: entry is a JSON object (a trailing
// newline is allowed); the line is entry with g's fields first.
func (w *Writer) Append(g Gen, entry []byte) (Mark, error) {
	if len(entry) < 2 || entry[0] != '{' {
		return 0, fmt.Errorf("journal: an entry must be a JSON object")
	}
	if entry[len(entry)-1] == '\n' {
		entry = entry[:len(entry)-1]
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.appended, w.err
	}
	if w.closing {
		return w.appended, ErrClosed
	}
	w.buf = g.appendPrefix(w.buf)
	if entry[1] == '}' { // an empty object: drop the prefix's comma
		w.buf = append(w.buf[:len(w.buf)-1], '}')
	} else {
		w.buf = append(w.buf, entry[1:]...)
	}
	w.buf = append(w.buf, '\n')
	w.appended++
	w.stats.Lines++
	w.lazy()
	if len(w.buf) >= flushSize {
		w.kick()
	}
	return w.appended, nil
}

// Wait returns once the lines up to m are durable, or the journal's
// error. It holds nothing while it waits.
//
// J3: lines are durable in append order; one sync serves every waiter of
// its moment.
func (w *Writer) Wait(m Mark) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m > w.appended {
		m = w.appended
	}
	if w.synced >= m || w.err != nil {
		return w.err
	}
	if m > w.wanted {
		w.wanted = m
		w.kick()
	}
	for w.synced < m && w.err == nil {
		w.durable.Wait()
	}
	return w.err
}

// Flush returns once every line appended and every stream write made
// before it are written to their files — where a killed process cannot
// lose them, though an OS crash may: nothing is synced — or with the
// journal's error. A caller that must not act before its record is on
// file, and need not wait for a sync, flushes.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.closing {
		return ErrClosed
	}
	// A round under way may have taken the buffers before these bytes
	// reached them: the next one takes them.
	want := w.begun + 1
	w.kick()
	for w.ended < want && w.err == nil && !w.stopped {
		w.durable.Wait()
	}
	return w.err
}

// Last is the Mark of every line appended so far.
func (w *Writer) Last() Mark {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appended
}

// Err is the error that stopped the journal, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stats returns the counts so far.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// Close commits everything appended and flushes every stream, syncs them
// all, and stops the writer. Later appends fail with ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		<-w.done
		return w.Err()
	}
	w.closing = true
	w.wanted = w.appended
	w.kick()
	w.mu.Unlock()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	for _, s := range w.streams {
		if sy, ok := s.w.(interface{ Sync() error }); ok {
			if err := sy.Sync(); err != nil {
				w.err = fmt.Errorf("%s: sync: %w", s.name, err)
				return w.err
			}
		}
	}
	return nil
}

// kick wakes the writer now. w.mu is held.
func (w *Writer) kick() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// lazy schedules a flush FlushDelay from now unless one is. w.mu is held.
func (w *Writer) lazy() {
	if w.armed {
		return
	}
	w.armed = true
	if w.timer == nil {
		w.timer = time.AfterFunc(w.delay, func() {
			w.mu.Lock()
			w.kick()
			w.mu.Unlock()
		})
		return
	}
	w.timer.Reset(w.delay)
}

// run is the writer goroutine: each round writes what was appended (the
// streams first, so an event is on file no later than the journal line it
// follows), then syncs the journal if a waiter asked for a line it wrote.
//
// J3, J4: the one goroutine that writes; its first failed write stops the
// journal for good.
func (w *Writer) run() {
	defer close(w.done)
	var spare []byte
	sides := make([][]byte, 0, 4)
	for {
		<-w.wake
		w.mu.Lock()
		w.armed = false
		w.begun++
		round := w.begun
		buf, target, closing := w.buf, w.appended, w.closing
		w.buf = spare[:0]
		sides = sides[:0]
		for _, s := range w.streams {
			sides = append(sides, s.buf)
			s.buf = s.spare[:0]
		}
		needSync := w.wanted > w.synced && w.err == nil
		failed := w.err != nil
		w.mu.Unlock()

		var err error
		if !failed {
			err = w.flush(buf, sides)
			if err == nil && needSync {
				err = w.sync(w.f)
				if err != nil {
					err = fmt.Errorf("%s: sync: %w", w.f.Name(), err)
				}
			}
		}

		w.mu.Lock()
		spare = buf
		for i, s := range w.streams {
			if i < len(sides) {
				s.spare = sides[i]
			}
		}
		if err != nil && w.err == nil {
			w.err = err
			if w.onErr != nil {
				go w.onErr(err)
			}
		}
		if err == nil && !failed {
			if len(buf) > 0 {
				w.stats.Writes++
			}
			w.written = target
			if needSync {
				w.stats.Commits++
				w.synced = target
			}
		}
		w.ended = round
		more := len(w.buf) > 0 || w.wanted > w.synced
		if closing && (!more || w.err != nil) {
			w.stopped = true
			w.durable.Broadcast()
			w.mu.Unlock()
			return
		}
		w.durable.Broadcast()
		if more && (w.wanted > w.synced || closing) {
			w.kick()
		}
		w.mu.Unlock()
	}
}

// flush writes the streams' bytes, then the journal's.
func (w *Writer) flush(buf []byte, sides [][]byte) error {
	for i, b := range sides {
		if len(b) == 0 {
			continue
		}
		if _, err := w.streams[i].w.Write(b); err != nil {
			return fmt.Errorf("%s: %w", w.streams[i].name, err)
		}
	}
	if len(buf) == 0 {
		return nil
	}
	if _, err := w.f.Write(buf); err != nil {
		return fmt.Errorf("%s: %w", w.f.Name(), err)
	}
	return nil
}

// Stream is a file written with the journal: its writes are buffered and
// go out at the journal's next flush.
type Stream struct {
	jw    *Writer
	w     io.Writer
	name  string
	buf   []byte
	spare []byte
}

// Stream adds a file written with the journal; name says which in
// errors. Add streams before the first append.
func (w *Writer) Stream(name string, f io.Writer) *Stream {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := &Stream{jw: w, w: f, name: name}
	w.streams = append(w.streams, s)
	return s
}

// Write buffers p (whole lines); it fails only once the journal has.
func (s *Stream) Write(p []byte) (int, error) {
	return s.write(p, false)
}

// WriteLine buffers p and a newline.
func (s *Stream) WriteLine(p []byte) error {
	_, err := s.write(p, true)
	return err
}

func (s *Stream) write(p []byte, newline bool) (int, error) {
	w := s.jw
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if w.closing {
		return 0, ErrClosed
	}
	s.buf = append(s.buf, p...)
	if newline {
		s.buf = append(s.buf, '\n')
	}
	w.lazy()
	if len(s.buf) >= flushSize {
		w.kick()
	}
	return len(p), nil
}
