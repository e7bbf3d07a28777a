package natsboard

// A task attempt's transcript journal on JetStream: what lets another
// worker resume a task's generator after the worker running it died,
// exactly as a local resume does (engine.Replay). Entries go on the
// subject fsd.journal.RUN.TASK.ATTEMPT of the stream JournalStream, in
// the order the transcript wrote them, several to a message: those
// appended since the last publish, one per line. A step's entries are
// published when the step waits for them (or journalLinger after the
// first of them, when nobody waits), so a step costs the stream one
// message and one acknowledgement, not one per entry.
//
// Fencing. Locally, a run folder's lock keeps a second process from
// writing a journal someone resumes. Here a worker that lost its lease
// (its heartbeats stopped reaching the server, the task went to another
// worker) may still be running and appending. Every entry says which
// delivery of the task message wrote it (Fsd-Delivery); the first entry a
// delivery writes also says how much of the journal it read (Fsd-Base:
// the stream sequence of the last entry of its view). readJournal applies
// the rule below, so a later delivery's view is never changed by an
// earlier one's late writes.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fsdrun/fsd/journal"
)

// The headers of a journal entry.
const (
	// DeliveryHeader is the delivery (the task message's NumDelivered)
	// that wrote the entry.
	DeliveryHeader = "Fsd-Delivery"
	// BaseHeader, on the first entry a delivery writes, is the stream
	// sequence of the last entry that delivery read (0: none).
	BaseHeader = "Fsd-Base"
)

// journalSubject is where an attempt's transcript entries go.
func journalSubject(run, task string, attempt int) string {
	return journalSubjects + "." + ResultKey(run, task, attempt)
}

// journalEntry is one stored entry as the reader sees it.
type journalEntry struct {
	seq      uint64 // stream sequence
	delivery uint64
	base     uint64
	based    bool
	data     json.RawMessage
}

// view is what a reader accepts of an attempt's journal.
type view struct {
	entries []json.RawMessage
	seqs    []uint64 // stream sequence of each entry
}

// last is the stream sequence of the view's last entry (0: empty): the
// Fsd-Base of the next delivery's first entry.
func (v *view) last() uint64 {
	if len(v.seqs) == 0 {
		return 0
	}
	return v.seqs[len(v.seqs)-1]
}

// journalView applies the fencing rule to an attempt's entries in stream
// order. An entry carrying Fsd-Base S from delivery d, newer than the
// delivery accepted so far, starts d's view: accepted entries after S
// are dropped, and from then on only d's entries are accepted (until a
// newer delivery's based entry). Entries of older deliveries are dropped.
// So is an entry out of place (its transcript seq is not the view's
// length: an earlier entry of its delivery was lost), and everything its
// delivery writes after it, since a view must be a transcript's prefix.
func journalView(in []journalEntry) *view {
	v := &view{}
	var cur uint64
	broken := false
	for _, e := range in {
		if e.delivery < cur || (e.delivery > cur && !e.based) {
			continue // stale, or a newer delivery that lost its first entry
		}
		if e.based && e.delivery > cur {
			cur, broken = e.delivery, false
			n := len(v.seqs)
			for n > 0 && v.seqs[n-1] > e.base {
				n--
			}
			v.entries, v.seqs = v.entries[:n], v.seqs[:n]
		}
		if broken {
			continue
		}
		var head struct {
			Seq *int `json:"seq"`
		}
		if json.Unmarshal(e.data, &head) != nil || head.Seq == nil || *head.Seq != len(v.entries) {
			broken = true
			continue
		}
		v.entries = append(v.entries, e.data)
		v.seqs = append(v.seqs, e.seq)
	}
	return v
}

// readJournal reads an attempt's subject up to its last entry as of now
// and applies the fencing rule.
//
// N11: entries are fenced by delivery, so a stale writer never changes the
// view.
func readJournal(ctx context.Context, s jetstream.Stream, run, task string, attempt int) (*view, error) {
	subject := journalSubject(run, task, attempt)
	key := ResultKey(run, task, attempt)
	last, err := s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return &view{}, nil // the common case: a first delivery, one request
	}
	if err != nil {
		return nil, fmt.Errorf("journal of %s: %w", key, err)
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject},
		InactiveThreshold: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("journal of %s: %w", key, err)
	}
	var in []journalEntry
	for seq, idle := uint64(0), 0; seq < last.Sequence; {
		// No wait: the entries are stored; a batch brings what is there.
		batch, err := cons.FetchNoWait(256)
		if err != nil {
			return nil, fmt.Errorf("journal of %s: %w", key, err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			md, err := msg.Metadata()
			if err != nil {
				return nil, fmt.Errorf("journal of %s: %w", key, err)
			}
			if md.Sequence.Stream > last.Sequence {
				continue
			}
			seq = md.Sequence.Stream
			in = append(in, entriesOf(seq, msg.Headers(), msg.Data())...)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, fmt.Errorf("journal of %s: %w", key, err)
		}
		if n > 0 {
			idle = 0
			continue
		}
		if idle++; idle > 20 || ctx.Err() != nil {
			// Entries up to last existed a moment ago; none came.
			return nil, fmt.Errorf("journal of %s: %w reading up to entry %d", key, nats.ErrTimeout, last.Sequence)
		}
		sleep(ctx, 50*time.Millisecond)
	}
	return journalView(in), nil
}

// entryOf reads a stored entry's headers.
func entryOf(seq uint64, h nats.Header, data []byte) journalEntry {
	e := journalEntry{seq: seq, data: json.RawMessage(data)}
	e.delivery, _ = strconv.ParseUint(h.Get(DeliveryHeader), 10, 64)
	if b := h.Get(BaseHeader); b != "" {
		e.base, _ = strconv.ParseUint(b, 10, 64)
		e.based = true
	}
	return e
}

// entriesOf splits a stored message into its entries, one per line, all
// with the message's stream sequence and delivery; only the first carries
// the message's base.
func entriesOf(seq uint64, h nats.Header, data []byte) []journalEntry {
	first := entryOf(seq, h, nil)
	var out []journalEntry
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		e := first
		e.data = json.RawMessage(line)
		if len(out) > 0 {
			e.based, e.base = false, 0
		}
		out = append(out, e)
	}
	return out
}

// journalStallWait is how long an append waits for a free slot when the
// connection has as many unacked publishes as it allows (4,000).
const journalStallWait = 10 * time.Second

// journalLinger is the longest an appended entry waits for a Wait before
// it is published anyway: as a local journal writes a line nobody waits
// for at most 20 ms late, a worker killed under commit-before-effects
// loses the entries of the last moments, not of the steps since the last
// effect.
const journalLinger = 20 * time.Millisecond

// AttemptLog is the journal.Log of one delivery of one task attempt on
// JetStream. Append keeps the entry and returns at once; the entries kept
// go out as one message, asynchronously, when a Wait asks for one of them
// (or journalLinger after the first, or when one more would not fit the
// server's max_payload). Wait returns when every entry up to a Mark is
// stored (acked by the stream), or with the first error: a failed publish
// is never taken for a stored one.
type AttemptLog struct {
	js       jetstream.JetStream
	gen      journal.Gen
	subject  string
	delivery string
	base     string // "" once the first message is out
	max      int64  // the server's max payload

	mu      sync.Mutex
	n       journal.Mark // entries appended
	acked   journal.Mark // entries stored, in order
	kept    [][]byte     // entries appended and not yet published
	size    int          // their bytes, with a newline each
	timer   *time.Timer  // publishes kept entries nobody waits for
	linger  time.Duration
	pending []published
	err     error
	done    bool // Abandon: kept entries are dropped

	waitMu sync.Mutex // one waiter reads the futures at a time
}

// published is one message of entries on its way: its future, and the
// Mark of its last entry.
type published struct {
	f    jetstream.PubAckFuture
	upto journal.Mark
}

// NewAttemptLog starts the journal of delivery (the task message's
// NumDelivered) of an attempt, whose view of the journal ended at stream
// sequence base (0: empty). js should time async publishes out
// (jetstream.WithPublishAsyncTimeout), or a lost ack makes Wait wait
// until the connection closes.
func NewAttemptLog(js jetstream.JetStream, run, task string, attempt int, delivery, base uint64) *AttemptLog {
	l := &AttemptLog{}
	l.init(js, journalSubject(run, task, attempt), task, attempt, delivery, base)
	return l
}

// init is NewAttemptLog for a log kept elsewhere (a taskRun's), on the
// attempt's journal subject.
func (l *AttemptLog) init(js jetstream.JetStream, subject, task string, attempt int, delivery, base uint64) {
	l.js, l.gen, l.subject = js, journal.Gen{Task: task, Attempt: max(attempt, 1)}, subject
	l.delivery, l.base = strconv.FormatUint(delivery, 10), strconv.FormatUint(base, 10)
	l.max, l.linger = js.Conn().MaxPayload(), journalLinger
}

// Append keeps one entry of the attempt's generator for the next publish.
//
// N14: an entry over max_payload fails the step, saying so.
func (l *AttemptLog) Append(g journal.Gen, entry []byte) (journal.Mark, error) {
	if g.Task != l.gen.Task || max(g.Attempt, 1) != l.gen.Attempt {
		return 0, fmt.Errorf("journal of %s: an entry of another generator (%s #%d)", l.subject, g.Task, g.Attempt)
	}
	entry = bytes.TrimSuffix(entry, []byte("\n"))
	if len(entry) < 2 || entry[0] != '{' || bytes.IndexByte(entry, '\n') >= 0 {
		return 0, errors.New("journal: an entry must be a JSON object on one line")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.n, l.err
	}
	room := l.max - 1024
	if l.max > 0 && int64(len(entry)) > room {
		l.err = fmt.Errorf("journal of %s: entry %d is %d bytes, over what the NATS server takes in one message (max_payload %d)",
			l.subject, l.n, len(entry), l.max)
		return l.n, l.err
	}
	if l.max > 0 && int64(l.size+len(entry)) > room {
		if l.publish(); l.err != nil {
			return l.n, l.err
		}
	}
	l.kept = append(l.kept, bytes.Clone(entry))
	l.size += len(entry) + 1
	l.n++
	if l.timer == nil {
		l.timer = time.AfterFunc(l.linger, l.lingered)
	} else if len(l.kept) == 1 {
		l.timer.Reset(l.linger)
	}
	return l.n, nil
}

// lingered publishes the entries kept since nobody waited for them.
func (l *AttemptLog) lingered() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done && l.err == nil {
		l.publish()
	}
}

// publish sends the kept entries as one message (l.mu held). A failure is
// l.err.
func (l *AttemptLog) publish() {
	if len(l.kept) == 0 {
		return
	}
	msg := &nats.Msg{Subject: l.subject, Data: bytes.Join(l.kept, []byte("\n")), Header: nats.Header{DeliveryHeader: []string{l.delivery}}}
	if l.base != "" {
		msg.Header.Set(BaseHeader, l.base)
	}
	l.kept, l.size = l.kept[:0], 0
	if l.timer != nil {
		l.timer.Stop()
	}
	// No retries: a retried publish could be stored after the next one.
	// Past the connection's bound on unacked publishes a publish waits
	// (a while, not the client's default 200 ms) for acks to come.
	f, err := l.js.PublishMsgAsync(msg, jetstream.WithExpectStream(JournalStream), jetstream.WithRetryAttempts(0),
		jetstream.WithStallWait(journalStallWait))
	if err != nil {
		l.err = fmt.Errorf("journal of %s: %w", l.subject, err)
		return
	}
	l.base = ""
	l.pending = append(l.pending, published{f: f, upto: l.n})
}

// Wait publishes the entries kept up to m and returns once they are
// stored, or the first error.
//
// N10: the first failed publish fails this wait and every later one.
// U7: the entries kept go out as one message.
func (l *AttemptLog) Wait(m journal.Mark) error {
	l.waitMu.Lock()
	defer l.waitMu.Unlock()
	l.mu.Lock()
	if l.err == nil && m > l.acked && (len(l.pending) == 0 || l.pending[len(l.pending)-1].upto < m) {
		l.publish()
	}
	l.mu.Unlock()
	for {
		l.mu.Lock()
		if l.err != nil || l.acked >= m || len(l.pending) == 0 {
			err := l.err
			l.mu.Unlock()
			return err
		}
		p := l.pending[0]
		l.mu.Unlock()
		var err error
		select {
		case <-p.f.Ok():
		case err = <-p.f.Err():
		}
		l.mu.Lock()
		if err != nil && l.err == nil {
			l.err = fmt.Errorf("journal of %s: entry %d: %w", l.subject, l.acked, err)
		}
		if err == nil {
			l.acked = p.upto
			l.pending = l.pending[1:]
		}
		l.mu.Unlock()
	}
}

// Abandon drops the entries kept and not yet published, and publishes
// none from now on: the attempt's outcome, committed with its whole
// transcript, made them moot.
func (l *AttemptLog) Abandon() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
	l.kept, l.size = nil, 0
	if l.timer != nil {
		l.timer.Stop()
	}
}

// Last is the Mark of every entry appended so far.
func (l *AttemptLog) Last() journal.Mark {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// Err is the error that stopped the journal, if any.
func (l *AttemptLog) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}
