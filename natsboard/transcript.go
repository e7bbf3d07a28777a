package natsboard

// The transcript an outcome carries to the coordinator's run record.

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/fsdrun/fsd/journal"
)

// inlineJournalMax bounds the transcript an outcome carries inline, as a
// share of the server's max payload: a larger one stays on the journal
// stream only, and the coordinator reads it from there. Carried inline,
// a transcript costs the coordinator nothing to copy; read from the
// stream, it costs a lookup and an ordered consumer per task.
const inlineJournalMax = 4 // at most 1/4 of max_payload

// teeLog is the journal of a task attempt that also keeps what it
// journaled, for the outcome, while it is small enough to go inline: past
// max bytes (with the resumed entries) it keeps nothing more.
type teeLog struct {
	journal.Log
	resumed []json.RawMessage
	max     int // 0: no bound

	mu      sync.Mutex
	entries []json.RawMessage
	size    int
	over    bool
}

// newTeeLog tees l after the resumed entries, up to a share of the
// server's max payload (0: unbounded).
func newTeeLog(l journal.Log, resumed []json.RawMessage, maxPayload int64) *teeLog {
	t := &teeLog{}
	t.init(l, resumed, maxPayload)
	return t
}

// init is newTeeLog for a tee kept elsewhere (a taskRun's).
func (t *teeLog) init(l journal.Log, resumed []json.RawMessage, maxPayload int64) {
	t.Log, t.resumed, t.max = l, resumed, int(maxPayload/inlineJournalMax)
	for _, e := range resumed {
		t.size += len(e)
	}
	t.over = t.max > 0 && t.size > t.max
}

func (t *teeLog) Append(g journal.Gen, entry []byte) (journal.Mark, error) {
	m, err := t.Log.Append(g, entry)
	if err != nil {
		return m, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.over {
		return m, nil
	}
	e := bytes.TrimSuffix(entry, []byte("\n"))
	if t.size += len(e); t.max > 0 && t.size > t.max {
		t.over, t.entries = true, nil
		return m, nil
	}
	t.entries = append(t.entries, bytes.Clone(e))
	return m, nil
}

// inline returns the attempt's whole transcript, resumed entries first,
// when it is small enough to go in the outcome; nil otherwise.
//
// N12: inline in the outcome when it fits a quarter of max_payload.
func (t *teeLog) inline() []json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.over {
		return nil
	}
	if len(t.resumed) == 0 && t.entries != nil {
		// Appends after this one do not change what it returned.
		return t.entries
	}
	out := make([]json.RawMessage, 0, len(t.resumed)+len(t.entries))
	return append(append(out, t.resumed...), t.entries...)
}
