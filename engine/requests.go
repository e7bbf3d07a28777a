package engine

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/transcript"
)

// sent is a request as the record keeps it: the request, where its window
// lies in the transcript, and the stubs that replaced reclaimed results.
type sent struct {
	req   *model.Request
	spans []transcript.Span
	stubs map[int]string
}

// request writes a request line to requests.jsonl, preceded by the blobs
// (context block, tool definitions) the record does not hold yet. The
// line is written before the model is called, so a call that hangs or
// crashes the process is still on record. Writes are not synced: the
// transcript's step sync is what resume relies on.
func (rec *record) request(gen string, s sent, at int, now time.Time) {
	if rec == nil {
		return
	}
	c := s.req.Caller
	line := runrecord.Line{Kind: runrecord.KindRequest, Gen: gen, Task: c.TaskID, Agent: c.Agent, Step: c.Step,
		Time: now, Window: s.spans, Stubs: s.stubs, At: at}
	var buf []byte
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.requests == nil {
		return
	}
	line.Context = rec.contextHash(s.req.Context)
	if !rec.blobs[line.Context] {
		buf = appendLine(buf, runrecord.Line{Kind: runrecord.KindBlob, Hash: line.Context, Text: &s.req.Context})
		rec.blobs[line.Context] = true
	}
	for _, d := range s.req.Tools {
		h := runrecord.ToolHash(d)
		line.Tools = append(line.Tools, h)
		if !rec.blobs[h] {
			buf = appendLine(buf, runrecord.Line{Kind: runrecord.KindBlob, Hash: h,
				Tool: &runrecord.ToolText{Name: d.Name, Description: d.Description, Parameters: string(d.Parameters)}})
			rec.blobs[h] = true
		}
	}
	buf = appendLine(buf, line)
	if _, err := rec.requests.Write(buf); err != nil {
		rec.fail(fmt.Errorf("run record: %s: %w", runrecord.RequestsFile, err))
	}
}

// contextHash is runrecord.TextHash of a context block, remembered: most
// requests of a run carry one of a few blocks. rec.mu is held.
func (rec *record) contextHash(text string) string {
	if h, ok := rec.ctxHash[text]; ok {
		return h
	}
	h := runrecord.TextHash(text)
	if len(rec.ctxHash) < 4096 {
		rec.ctxHash[text] = h
	}
	return h
}

// response writes the response line of a step: its usage (with the
// request's o200k counts by part when the usage is an estimate) or its
// error.
func (rec *record) response(gen string, c model.Caller, u model.Usage, cost float64, tk *event.Tokens, err error, now time.Time) {
	if rec == nil {
		return
	}
	line := runrecord.Line{Kind: runrecord.KindResponse, Gen: gen, Task: c.TaskID, Agent: c.Agent, Step: c.Step, Time: now,
		Usage: &u, Cost: cost, Tokens: tk}
	if err != nil {
		line.Error = err.Error()
	}
	buf := appendLine(nil, line)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.requests != nil {
		if _, err := rec.requests.Write(buf); err != nil {
			rec.fail(fmt.Errorf("run record: %s: %w", runrecord.RequestsFile, err))
		}
	}
}

func appendLine(buf []byte, l runrecord.Line) []byte {
	b, err := json.Marshal(l)
	if err != nil {
		return buf
	}
	return append(append(buf, b...), '\n')
}

// stubsOf returns the transcript positions and texts of window messages
// that reclaim replaced, or nil.
func stubsOf(window, sentMsgs []model.Message, spans []transcript.Span) map[int]string {
	if len(window) == 0 || &window[0] == &sentMsgs[0] {
		return nil // reclaim copies the window only when it changes it
	}
	var stubs map[int]string
	i := 0
	for _, sp := range spans {
		for pos := sp.From; pos < sp.To && i < len(window); pos++ {
			if sentMsgs[i].Text != window[i].Text {
				if stubs == nil {
					stubs = map[int]string{}
				}
				stubs[pos] = sentMsgs[i].Text
			}
			i++
		}
	}
	return stubs
}
