package event

import (
	"encoding/json"

	"github.com/fsdrun/fsd/internal/jsonw"
	"github.com/fsdrun/fsd/model"
)

// AppendJSON appends e as json.Marshal encodes it, byte for byte, without
// its reflection: events.jsonl takes one line per event, and a large run
// emits several per task. It fails where json.Marshal fails (arguments or
// an output that are not JSON, a NaN).
//
// F1: what json.Marshal writes, or json.Marshal itself.
func (e *Event) AppendJSON(dst []byte) ([]byte, error) {
	if !eventAppenderMatches() || !rawOK(e.Args) || !rawOK(e.Output) || !jsonw.FloatOK(e.Cost) || !jsonw.TimeOK(e.Time) || !jsonw.FloatOK(e.Elapsed) ||
		(e.Progress != nil && (!jsonw.FloatOK(e.Progress.Done) || !jsonw.FloatOK(e.Progress.Total))) {
		b, err := json.Marshal(*e) // a copy: e itself stays off the heap
		return append(dst, b...), err
	}
	return appendEvent(dst, e), nil
}

func rawOK(raw json.RawMessage) bool { return len(raw) == 0 || json.Valid(raw) }

// eventAppenderMatches is false when Event (or a type in it) has a field
// appendEvent does not write: AppendJSON then stays correct through
// json.Marshal, and TestAppendJSON fails.
var eventAppenderMatches = jsonw.MatchesOnce(appendEvent)

func appendEvent(b []byte, e *Event) []byte {
	b = append(b, '{')
	b = jsonw.String(jsonw.Key(b, "type"), e.Type)
	b = jsonw.Time(jsonw.Key(b, "time"), e.Time)
	b = jsonw.String(jsonw.Key(b, "run"), e.Run)
	b = jsonw.OptString(b, "task", e.Task)
	b = jsonw.OptString(b, "agent", e.Agent)
	b = jsonw.OptString(b, "text", e.Text)
	b = jsonw.OptTrue(b, "delta", e.Delta)
	b = jsonw.OptString(b, "tool", e.Tool)
	b = jsonw.OptString(b, "call_id", e.CallID)
	if len(e.Args) > 0 {
		b = jsonw.Value(jsonw.Key(b, "args"), e.Args)
	}
	b = jsonw.OptString(b, "result", e.Result)
	if len(e.Output) > 0 {
		b = jsonw.Value(jsonw.Key(b, "output"), e.Output)
	}
	b = jsonw.OptTrue(b, "error", e.Error)
	b = jsonw.OptString(b, "skill", e.Skill)
	b = jsonw.OptString(b, "version", e.Version)
	b = jsonw.OptString(b, "reason", e.Reason)
	b = jsonw.OptString(b, "at", e.At)
	if e.Tokens != nil {
		b = AppendTokens(jsonw.Key(b, "tokens"), e.Tokens)
	}
	if e.Messages != 0 {
		b = jsonw.Int(jsonw.Key(b, "messages"), int64(e.Messages))
	}
	if e.Usage != nil {
		b = AppendUsage(jsonw.Key(b, "usage"), e.Usage)
	}
	if e.Cost != 0 {
		b = jsonw.Float(jsonw.Key(b, "cost"), e.Cost)
	}
	b = jsonw.OptString(b, "status", e.Status)
	b = jsonw.OptString(b, "goal", e.Goal)
	if len(e.Deps) > 0 {
		b = jsonw.Strings(jsonw.Key(b, "deps"), e.Deps)
	}
	b = jsonw.OptString(b, "answer", e.Answer)
	b = jsonw.OptString(b, "err", e.Err)
	if e.Elapsed != 0 {
		b = jsonw.Float(jsonw.Key(b, "elapsed_ms"), e.Elapsed)
	}
	b = jsonw.OptString(b, "approval", e.Approval)
	b = jsonw.OptString(b, "by", e.By)
	if p := e.Progress; p != nil {
		b = jsonw.Float(jsonw.Key(append(jsonw.Key(b, "progress"), '{'), "done"), p.Done)
		if p.Total != 0 {
			b = jsonw.Float(jsonw.Key(b, "total"), p.Total)
		}
		b = append(b, '}')
	}
	b = jsonw.OptTrue(b, "replayed", e.Replayed)
	if w := e.Worker; w != nil {
		b = jsonw.String(jsonw.Key(append(jsonw.Key(b, "worker"), '{'), "name"), w.Name)
		b = jsonw.OptString(b, "host", w.Host)
		if w.PID != 0 {
			b = jsonw.Int(jsonw.Key(b, "pid"), int64(w.PID))
		}
		b = append(b, '}')
	}
	if len(e.Attempts) > 0 {
		b = jsonw.Value(jsonw.Key(b, "attempts"), e.Attempts) // rare: a task retried elsewhere
	}
	return append(b, '}')
}

// AppendUsage appends u as json.Marshal encodes it: the usage of events
// and of the record's response lines.
func AppendUsage(b []byte, u *model.Usage) []byte {
	if !usageAppenderMatches() {
		return jsonw.Value(b, *u)
	}
	return appendUsage(b, u)
}

var usageAppenderMatches = jsonw.MatchesOnce(appendUsage)

func appendUsage(b []byte, u *model.Usage) []byte {
	b = jsonw.Int(jsonw.Key(append(b, '{'), "input_tokens"), int64(u.InputTokens))
	b = jsonw.Int(jsonw.Key(b, "output_tokens"), int64(u.OutputTokens))
	if u.CachedInputTokens != 0 {
		b = jsonw.Int(jsonw.Key(b, "cached_input_tokens"), int64(u.CachedInputTokens))
	}
	if u.CacheWriteTokens != 0 {
		b = jsonw.Int(jsonw.Key(b, "cache_write_tokens"), int64(u.CacheWriteTokens))
	}
	if u.ReasoningTokens != 0 {
		b = jsonw.Int(jsonw.Key(b, "reasoning_tokens"), int64(u.ReasoningTokens))
	}
	b = jsonw.OptTrue(b, "estimated", u.Estimated)
	return append(b, '}')
}

// AppendTokens appends t as json.Marshal encodes it (checked with Event's
// appender).
func AppendTokens(b []byte, t *Tokens) []byte {
	b = jsonw.Int(jsonw.Key(append(b, '{'), "context"), int64(t.Context))
	b = jsonw.Int(jsonw.Key(b, "window"), int64(t.Window))
	b = jsonw.Int(jsonw.Key(b, "tools"), int64(t.Tools))
	b = jsonw.Int(jsonw.Key(b, "total"), int64(t.Total))
	return append(b, '}')
}
