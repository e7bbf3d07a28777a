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
// journaled, for the outcome.
type teeLog struct {
	journal.Log
	mu      sync.Mutex
	entries []json.RawMessage
	size    int
}

func (t *teeLog) Append(g journal.Gen, entry []byte) (journal.Mark, error) {
	m, err := t.Log.Append(g, entry)
	if err == nil {
		e := bytes.Clone(bytes.TrimSuffix(entry, []byte("\n")))
		t.mu.Lock()
		t.entries = append(t.entries, e)
		t.size += len(e)
		t.mu.Unlock()
	}
	return m, err
}

// inline returns the attempt's whole transcript, resumed entries first,
// when it is small enough to go in the outcome; nil otherwise.
func (t *teeLog) inline(resumed []json.RawMessage, maxPayload int64) []json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	size := t.size
	for _, e := range resumed {
		size += len(e)
	}
	if maxPayload > 0 && int64(size) > maxPayload/inlineJournalMax {
		return nil
	}
	out := make([]json.RawMessage, 0, len(resumed)+len(t.entries))
	return append(append(out, resumed...), t.entries...)
}
