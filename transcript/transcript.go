package transcript

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/fsdrun/fsd/model"
)

// Kind is what an Entry records.
type Kind string

// The entry kinds.
const (
	KindMessage Kind = "message"
	KindContext Kind = "context"
)

// Reason says why skills were loaded or unloaded (L5, C4).
type Reason string

// The reasons of a ContextChange.
const (
	ReasonRead           Reason = "read"            // read_skill loaded it
	ReasonReread         Reason = "reread"          // read again: now the active skill, nothing new loaded
	ReasonEvicted        Reason = "evicted"         // unloaded to make room (L1)
	ReasonDisabled       Reason = "disabled"        // no longer enabled (C4)
	ReasonVersionChanged Reason = "version_changed" // its manifest changed version on disk (C4)
)

// ContextChange records skills entering or leaving the context (L5).
type ContextChange struct {
	Loaded   []string `json:"loaded,omitempty"`
	Unloaded []string `json:"unloaded,omitempty"`
	// Skill and Version name the skill the change is about.
	Skill   string `json:"skill,omitempty"`
	Version string `json:"version,omitempty"`
	Reason  Reason `json:"reason"`
	// Line is what the model reads about the change, rendered by whoever
	// made it (the engine states the exact form). When set, it also enters
	// the message sequence as a model.Context message, so windows carry it
	// (counted against the cap like any message); see AppendContext.
	Line string `json:"line,omitempty"`
	// Quotes names the skill, "ID@REVISION", whose text the last line of
	// Line quotes (model.Message.Quotes); empty when it quotes none.
	Quotes string `json:"quotes,omitempty"`
}

// Entry is one line of a transcript: a message or a context change. Seq is
// the entry's position, counted from 0.
type Entry struct {
	Seq     int            `json:"seq"`
	Time    time.Time      `json:"time"`
	Kind    Kind           `json:"kind"`
	Message *model.Message `json:"message,omitempty"`
	Context *ContextChange `json:"context,omitempty"`
}

// Option configures a Transcript.
type Option func(*Transcript)

// WithClock sets the clock that stamps entries (tests pin it).
func WithClock(now func() time.Time) Option {
	return func(t *Transcript) { t.now = now }
}

// WithStepSync makes appends write without syncing; the owner calls Sync
// at each step boundary instead. Every entry still reaches the file before
// the append returns, so a crash of the process loses nothing written; a
// crash of the machine loses at most the step in flight. The engine uses
// it so a step with many tool results costs one fsync, not one per result.
func WithStepSync() Option {
	return func(t *Transcript) { t.stepSync = true }
}

// WithJournal says the writer already holds the first n entries: a resumed
// run replays them in the same order and they are not written again, so
// the record on disk is never shortened, even if the resume itself
// crashes.
func WithJournal(n int) Option {
	return func(t *Transcript) { t.journaled = n }
}

// Transcript is one generator's append-only record. Every method is safe
// for concurrent use.
type Transcript struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	msgs    []model.Message
	entries []Entry
	idx     Index
	// held are context lines made while calls await results: they join
	// the messages right after the last of those results (W2).
	held []model.Message
	werr error // first write failure; later writes are skipped
	// stepSync defers fsync to Sync (WithStepSync).
	stepSync bool
	// journaled entries are on disk already (WithJournal).
	journaled int
	// first holds the first messages, their entries and the messages the
	// entries point to: a task's usual exchange (its message, a call, its
	// result, the answer) in the transcript's own allocation instead of
	// one for each.
	first struct {
		msgs    [firstMessages]model.Message
		entries [firstMessages]Entry
		copies  [firstMessages]model.Message
	}
	copied int // of first.copies
}

// firstMessages is how many messages a transcript holds before it
// allocates room for more.
const firstMessages = 4

// Sync flushes the record to stable storage when the writer can sync.
// The transcript is not locked while it waits: a journal's Sync may wait
// for a commit others share, and readers of the transcript go on.
func (t *Transcript) Sync() error {
	t.mu.Lock()
	werr := t.werr
	s, ok := t.w.(interface{ Sync() error })
	t.mu.Unlock()
	if werr != nil || !ok {
		return werr
	}
	if err := s.Sync(); err != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.werr == nil {
			t.werr = fmt.Errorf("%w: sync: %w", ErrRecord, err)
		}
		return t.werr
	}
	return nil
}

// New returns an empty transcript that writes each entry to w as one JSON
// line before the append returns, and syncs w when it can (an *os.File):
// a crash then loses at most the step in flight. A nil w keeps the
// transcript in memory only.
func New(w io.Writer, opts ...Option) *Transcript {
	t := &Transcript{w: w, now: time.Now}
	for _, o := range opts {
		o(t)
	}
	return t
}

// AppendMessage records m. A message that would break the transcript's
// shape is refused with an error wrapping ErrMalformed and not recorded;
// see Index.Add. A failure to write the record is returned as an error
// wrapping ErrRecord, but m is kept in memory, so the run can go on.
func (t *Transcript) AppendMessage(m model.Message) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.idx.Add(m); err != nil {
		return err
	}
	if t.msgs == nil {
		t.msgs = t.first.msgs[:0:len(t.first.msgs)]
	}
	t.msgs = append(t.msgs, m)
	var mc *model.Message
	if t.copied < len(t.first.copies) {
		mc = &t.first.copies[t.copied]
		t.copied++
		*mc = m
	} else {
		mc = new(model.Message)
		*mc = m
	}
	err := t.appendEntry(Entry{Kind: KindMessage, Message: mc})
	t.release()
	return err
}

// AppendContext records a context change. Its Line, when set, joins the
// messages as a model.Context message: at once when no call awaits its
// result, else right after the last result of the open group — a line
// never sits between a call and its result, and the entry itself keeps
// its place in the record. A change without a Line (records written
// before lines existed) adds no message.
func (t *Transcript) AppendContext(c ContextChange) error {
	if c.Reason == "" {
		return fmt.Errorf("%w: context change without a reason", ErrMalformed)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	err := t.appendEntry(Entry{Kind: KindContext, Context: &c})
	if c.Line != "" {
		t.held = append(t.held, model.Message{Role: model.Context, Text: c.Line, Quotes: c.Quotes})
		t.release()
	}
	return err
}

// release moves held context lines into the messages once no call awaits
// its result. t.mu is held.
func (t *Transcript) release() {
	if len(t.held) == 0 || t.idx.InFlight() != nil {
		return
	}
	for _, m := range t.held {
		_ = t.idx.Add(m) // cannot fail: no call is open
		t.msgs = append(t.msgs, m)
	}
	t.held = t.held[:0]
}

// Rebuild returns the messages a Transcript holds after entries are
// appended in order, context lines included where AppendContext puts
// them: what a resumed run's journal replays against.
func Rebuild(entries []Entry) ([]model.Message, error) {
	t := New(nil)
	err := t.AppendEntries(entries)
	return t.msgs, err
}

// AppendEntries appends entries as they were recorded: each message and
// context change in order, context lines placed as AppendContext places
// them.
func (t *Transcript) AppendEntries(entries []Entry) error {
	for _, e := range entries {
		var err error
		switch {
		case e.Message != nil:
			err = t.AppendMessage(*e.Message)
		case e.Context != nil:
			err = t.AppendContext(*e.Context)
		}
		if err != nil {
			return fmt.Errorf("entry %d: %w", e.Seq, err)
		}
	}
	return nil
}

// ErrRecord is wrapped by errors writing the transcript's record.
var ErrRecord = errors.New("transcript record")

// appendEntry stamps e, keeps it and writes it. t.mu is held.
func (t *Transcript) appendEntry(e Entry) error {
	e.Seq = len(t.entries)
	e.Time = t.now()
	if t.entries == nil {
		t.entries = t.first.entries[:0:len(t.first.entries)]
	}
	t.entries = append(t.entries, e)
	if t.w == nil {
		return nil
	}
	if t.werr != nil {
		// A failed write may have left half a line; more lines after it
		// would not be a record anyone can trust.
		return t.werr
	}
	if e.Seq < t.journaled {
		return nil
	}
	bp := lineBufs.Get().(*[]byte)
	defer putLineBuf(bp)
	line, err := appendEntryLine((*bp)[:0], &e)
	if err != nil {
		t.werr = fmt.Errorf("%w: entry %d: %w", ErrRecord, e.Seq, err)
		return t.werr
	}
	*bp = line
	if _, err := t.w.Write(line); err != nil {
		t.werr = fmt.Errorf("%w: entry %d: %w", ErrRecord, e.Seq, err)
		return t.werr
	}
	if s, ok := t.w.(interface{ Sync() error }); ok && !t.stepSync {
		if err := s.Sync(); err != nil {
			t.werr = fmt.Errorf("%w: sync entry %d: %w", ErrRecord, e.Seq, err)
			return t.werr
		}
	}
	return nil
}

// Messages returns every message so far, in order. The slice is a
// read-only view shared with the transcript, not a copy.
func (t *Transcript) Messages() []model.Message {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.msgs[:len(t.msgs):len(t.msgs)]
}

// Entries returns every entry so far, in order; read-only, not a copy.
func (t *Transcript) Entries() []Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.entries[:len(t.entries):len(t.entries)]
}

// Len is the number of messages (not entries) so far.
func (t *Transcript) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.msgs)
}

// Window returns the messages the next request carries under a cap of max
// (W1, W2, W4), with hysteresis down to LowWater(max): see
// Index.WindowLow. Each call moves the window on, so call it once per
// request. Read-only.
func (t *Transcript) Window(max int) []model.Message {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.idx.WindowLow(t.msgs, max, LowWater(max))
}

// Shed is how a window over its cap lets the oldest messages go (W1).
type Shed uint8

// The shedding policies (spec.WindowShed spells them in a workflow).
const (
	// ShedHalf is Index.WindowLow down to LowWater: batches, and a first
	// message that stays put for many requests (a cacheable prefix).
	ShedHalf Shed = iota
	// ShedOldest is Index.WindowOldest: one group at a time, as much
	// history as fits.
	ShedOldest
)

// WindowSpans is Window, shed as shed says, with the positions of its
// messages in the transcript: one span, or two when the window begins
// inside a turn (that turn's user message, then the newest groups that
// fit).
func (t *Transcript) WindowSpans(max int, shed Shed) ([]model.Message, []Span) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var w []model.Message
	if shed == ShedOldest {
		w = t.idx.WindowOldest(t.msgs, max)
	} else {
		w = t.idx.WindowLow(t.msgs, max, LowWater(max))
	}
	return w, t.idx.spans(t.msgs, w)
}

// InFlight returns the calls of the last assistant message that await
// results, in order; nil when none does. Until they are answered the
// transcript refuses any other message, and windows end before them.
func (t *Transcript) InFlight() []model.ToolCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.idx.InFlight()
}
