package transcript

import (
	"encoding/json"
	"sync"

	"github.com/fsdrun/fsd/internal/jsonw"
)

// appendEntryLine appends e and a newline as json.Marshal encodes e. The
// entries a run journals most (text messages, plain tool results) are
// encoded without reflection; one carrying tool calls, media, provider
// state or a context change goes through json.Marshal, which also
// refuses arguments that are not JSON.
//
// F1: what json.Marshal writes, or json.Marshal itself.
func appendEntryLine(b []byte, e *Entry) ([]byte, error) {
	if m := e.Message; !entryAppenderMatches() || e.Context != nil || !jsonw.TimeOK(e.Time) ||
		(m != nil && (len(m.Calls) > 0 || len(m.Media) > 0 || m.State != nil)) {
		line, err := json.Marshal(*e)
		if err != nil {
			return b, err
		}
		return append(append(b, line...), '\n'), nil
	}
	return append(appendEntry(b, e), '\n'), nil
}

// lineBufs are the buffers entries are encoded in: a writer copies what
// it is given, so a buffer serves the next entry of any transcript.
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// putLineBuf returns a buffer to lineBufs unless a long entry grew it.
func putLineBuf(bp *[]byte) {
	if cap(*bp) <= 64<<10 {
		lineBufs.Put(bp)
	}
}

// entryAppenderMatches is false when Entry or model.Message has a field
// appendEntry does not write: appendEntryLine then stays correct through
// json.Marshal, and TestAppendEntry fails.
var entryAppenderMatches = jsonw.MatchesOnce(appendEntry)

func appendEntry(b []byte, e *Entry) []byte {
	b = jsonw.Int(jsonw.Key(append(b, '{'), "seq"), int64(e.Seq))
	b = jsonw.Time(jsonw.Key(b, "time"), e.Time)
	b = jsonw.String(jsonw.Key(b, "kind"), string(e.Kind))
	if m := e.Message; m != nil {
		b = jsonw.String(jsonw.Key(append(jsonw.Key(b, "message"), '{'), "role"), string(m.Role))
		b = jsonw.OptString(b, "text", m.Text)
		if len(m.Calls) > 0 {
			b = jsonw.Value(jsonw.Key(b, "calls"), m.Calls)
		}
		b = jsonw.OptString(b, "call_id", m.CallID)
		b = jsonw.OptString(b, "name", m.Name)
		b = jsonw.OptTrue(b, "error", m.IsError)
		b = jsonw.OptString(b, "artifact", m.Artifact)
		b = jsonw.OptString(b, "spool", m.Spool)
		b = jsonw.OptString(b, "quotes", m.Quotes)
		if len(m.Media) > 0 {
			b = jsonw.Value(jsonw.Key(b, "media"), m.Media)
		}
		if m.State != nil {
			b = jsonw.Value(jsonw.Key(b, "state"), m.State)
		}
		b = jsonw.OptTrue(b, "volatile", m.Volatile)
		b = jsonw.OptString(b, "model", m.Model)
		b = append(b, '}')
	}
	if e.Context != nil {
		b = jsonw.Value(jsonw.Key(b, "context"), e.Context)
	}
	return append(b, '}')
}
