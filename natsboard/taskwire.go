package natsboard

import (
	"encoding/base64"
	"encoding/json"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/internal/jsonw"
)

// A task message is encoded by its coordinator and decoded by a worker
// once per task. Through reflection its ~30 fields cost the worker more
// than anything else it does for a task outside the task itself, and the
// coordinator a good part of a dispatch; the bytes on the wire are
// json.Marshal's either way, so workers and coordinators of other builds
// read each other as before.

// marshalMessage is json.Marshal(m), without reflection unless m carries
// inherited turns (model messages: left to json) or something json
// writes otherwise than appendMessage would (raw JSON that is not compact,
// a deadline RFC 3339 cannot hold), which json.Marshal also refuses when
// it must.
//
// U14: the bytes are json.Marshal's, or json.Marshal itself.
func marshalMessage(m *Message) ([]byte, error) {
	if !messageAppenderMatches() || len(m.Turns) > 0 || !m.Deadline.IsZero() && !jsonw.TimeOK(m.Deadline) {
		return json.Marshal(m)
	}
	n := 512 + len(m.Goal) + len(m.Input) + len(m.Observations) + len(m.Workspace)
	for i := range m.Deps {
		d := &m.Deps[i]
		if !compactJSON(d.Output) && len(d.Output) > 0 {
			return json.Marshal(m)
		}
		n += 40 + len(d.TaskID) + len(d.Agent) + len(d.Result) + len(d.Output)
	}
	return appendMessage(make([]byte, 0, n+n/16), m), nil
}

// messageAppenderMatches is false when Message, work.Attempt, work.Limits
// or board.DepResult has a field appendMessage does not write:
// marshalMessage then stays correct through json.Marshal, and
// TestAppendMessage fails.
var messageAppenderMatches = jsonw.MatchesOnce(appendMessage)

func appendMessage(b []byte, m *Message) []byte {
	b = jsonw.Int(jsonw.Key(append(b, '{'), "v"), int64(m.V))
	b = jsonw.String(jsonw.Key(b, "run"), m.Run)
	b = jsonw.String(jsonw.Key(b, "task"), m.Task)
	b = jsonw.Int(jsonw.Key(b, "attempt"), int64(m.Number))
	b = jsonw.String(jsonw.Key(b, "goal"), m.Goal)
	b = jsonw.OptString(b, "input", m.Input)
	if len(m.Deps) > 0 {
		b = append(jsonw.Key(b, "deps"), '[')
		for i := range m.Deps {
			d := &m.Deps[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonw.String(jsonw.Key(append(b, '{'), "task"), d.TaskID)
			b = jsonw.String(jsonw.Key(b, "agent"), d.Agent)
			b = jsonw.String(jsonw.Key(b, "result"), d.Result)
			if len(d.Output) > 0 {
				b = jsonw.Key(b, "output")
				if compactJSON(d.Output) {
					b = append(b, d.Output...)
				} else {
					b = jsonw.Value(b, d.Output)
				}
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = jsonw.OptString(b, "skill", m.Skill)
	b = jsonw.OptString(b, "agent", m.Agent)
	b = jsonw.OptString(b, "assignee", m.Assignee)
	if len(m.Turns) > 0 {
		b = jsonw.Value(jsonw.Key(b, "turns"), m.Turns)
	}
	b = jsonw.OptString(b, "observations", m.Observations)
	b = jsonw.OptString(b, "model", m.Model)
	l := &m.Limits
	b = jsonw.Int(jsonw.Key(append(jsonw.Key(b, "limits"), '{'), "max-steps"), int64(l.MaxSteps))
	b = jsonw.Int(jsonw.Key(b, "max-transcript-messages"), int64(l.MaxTranscriptMessages))
	b = optInt(b, "max-result-tokens", l.MaxResultTokens)
	b = jsonw.OptString(b, "readers", string(l.Readers))
	b = jsonw.OptString(b, "window-shed", string(l.WindowShed))
	b = optInt(b, "max-input-tokens", l.MaxInputTokens)
	b = append(optInt(b, "max-output-tokens", l.MaxOutputTokens), '}')
	if !m.Deadline.IsZero() {
		b = jsonw.Time(jsonw.Key(b, "deadline"), m.Deadline)
	}
	b = jsonw.OptString(b, "durability", string(m.Durability))
	b = jsonw.OptString(b, "approve", string(m.Approve))
	if m.ApprovalTimeout != 0 {
		b = jsonw.Int(jsonw.Key(b, "approval-timeout"), int64(m.ApprovalTimeout))
	}
	b = jsonw.OptString(b, "workspace", m.Workspace)
	if len(m.HandleKey) > 0 {
		b = append(base64.StdEncoding.AppendEncode(append(jsonw.Key(b, "handle-key"), '"'), m.HandleKey), '"')
	}
	b = jsonw.OptString(b, "cache-scope", m.CacheScope)
	if len(m.Builtins) > 0 {
		b = jsonw.Strings(jsonw.Key(b, "builtins"), m.Builtins)
	}
	b = jsonw.OptString(b, "bundle", m.Bundle)
	b = jsonw.OptString(b, "manifest", m.Manifest)
	b = jsonw.OptString(b, "script", m.Script)
	b = jsonw.OptString(b, "script-name", m.ScriptName)
	b = jsonw.String(jsonw.Key(b, "events"), m.Events)
	b = jsonw.OptString(b, "approvals", m.Approvals)
	b = jsonw.Int(jsonw.Key(b, "max-deliveries"), int64(m.MaxDeliveries))
	b = jsonw.OptString(b, "outcome-key", m.OutcomeKey)
	return append(b, '}')
}

// unmarshalMessage is json.Unmarshal(data, m) into a zero m, without
// reflection for a task message as json.Marshal writes it (a coordinator
// of any build): its keys once each, in Message's order, as its tags
// spell them, each value of its field's type, after the MAC a signed
// message begins with. Inherited turns are decoded by json alone. Any
// other input (a key spelled otherwise or unknown, a null, a number that
// is no int, space between tokens) goes through json.Unmarshal whole, so
// a malformed or tampered message is refused as it always was.
//
// U15: what json.Unmarshal decodes, or json.Unmarshal itself.
func unmarshalMessage(data []byte, m *Message) error {
	if !decodeMessage(data, m) {
		*m = Message{}
		return json.Unmarshal(data, m)
	}
	return nil
}

// messageKeys are Message's keys in the order json.Marshal writes them,
// after the MAC (auth.go; not Message's, json.Unmarshal skips it).
var messageKeys = []string{"mac", "v", "run", "task", "attempt", "goal", "input", "deps", "skill", "agent", "assignee",
	"turns", "observations", "model", "limits", "deadline", "durability", "approve", "approval-timeout", "workspace",
	"handle-key", "cache-scope", "builtins", "bundle", "manifest", "script", "script-name", "events", "approvals",
	"max-deliveries", "outcome-key"}

var (
	limitsKeys = []string{"max-steps", "max-transcript-messages", "max-result-tokens", "readers", "window-shed",
		"max-input-tokens", "max-output-tokens"}
	depKeys = []string{"task", "agent", "result", "output"}
)

// decodeMessage decodes data into m when it is in json.Marshal's form,
// and reports whether it was.
func decodeMessage(data []byte, m *Message) bool {
	end, ok := decodeObject(data, 0, messageKeys, func(key string, i int) (int, bool) {
		switch key {
		case "mac": // checked by the caller: skipped, as long as it is a plain string
			if i < len(data) && data[i] == '"' {
				return rawString(data, i)
			}
			return i, false
		case "v":
			return decodeInt(data, i, &m.V)
		case "run":
			return decodeText(data, i, &m.Run)
		case "task":
			return decodeText(data, i, &m.Task)
		case "attempt":
			return decodeInt(data, i, &m.Number)
		case "goal":
			return decodeText(data, i, &m.Goal)
		case "input":
			return decodeText(data, i, &m.Input)
		case "deps":
			return decodeDeps(data, i, &m.Deps)
		case "skill":
			return decodeText(data, i, &m.Skill)
		case "agent":
			return decodeText(data, i, &m.Agent)
		case "assignee":
			return decodeText(data, i, &m.Assignee)
		case "turns":
			// Model messages, rare here: json decodes them.
			end, ok := rawValue(data, i, 0)
			return end, ok && json.Unmarshal(data[i:end], &m.Turns) == nil
		case "observations":
			return decodeText(data, i, &m.Observations)
		case "model":
			return decodeText(data, i, &m.Model)
		case "limits":
			return decodeLimits(data, i, m)
		case "deadline":
			return decodeTime(data, i, &m.Deadline)
		case "durability":
			return decodeText(data, i, (*string)(&m.Durability))
		case "approve":
			return decodeText(data, i, (*string)(&m.Approve))
		case "approval-timeout":
			var n int
			end, ok := decodeInt(data, i, &n)
			m.ApprovalTimeout = time.Duration(n)
			return end, ok
		case "workspace":
			return decodeText(data, i, &m.Workspace)
		case "handle-key":
			return decodeBytes(data, i, &m.HandleKey)
		case "cache-scope":
			return decodeText(data, i, &m.CacheScope)
		case "builtins":
			return decodeTexts(data, i, &m.Builtins)
		case "bundle":
			return decodeText(data, i, &m.Bundle)
		case "manifest":
			return decodeText(data, i, &m.Manifest)
		case "script":
			return decodeText(data, i, &m.Script)
		case "script-name":
			return decodeText(data, i, &m.ScriptName)
		case "events":
			return decodeText(data, i, &m.Events)
		case "approvals":
			return decodeText(data, i, &m.Approvals)
		case "max-deliveries":
			return decodeInt(data, i, &m.MaxDeliveries)
		case "outcome-key":
			return decodeText(data, i, &m.OutcomeKey)
		}
		return i, false
	})
	return ok && end == len(data)
}

func decodeLimits(data []byte, i int, m *Message) (int, bool) {
	l := &m.Limits
	return decodeObject(data, i, limitsKeys, func(key string, i int) (int, bool) {
		switch key {
		case "max-steps":
			return decodeInt(data, i, &l.MaxSteps)
		case "max-transcript-messages":
			return decodeInt(data, i, &l.MaxTranscriptMessages)
		case "max-result-tokens":
			return decodeInt(data, i, &l.MaxResultTokens)
		case "readers":
			return decodeText(data, i, (*string)(&l.Readers))
		case "window-shed":
			return decodeText(data, i, (*string)(&l.WindowShed))
		case "max-input-tokens":
			return decodeInt(data, i, &l.MaxInputTokens)
		case "max-output-tokens":
			return decodeInt(data, i, &l.MaxOutputTokens)
		}
		return i, false
	})
}

// decodeDeps decodes the dependencies' results; an output (raw JSON) is
// taken as it is when compactJSON, as json copies it.
func decodeDeps(data []byte, i int, deps *[]board.DepResult) (int, bool) {
	if i >= len(data) || data[i] != '[' {
		return i, false
	}
	out := make([]board.DepResult, 0, 4)
	i++
	if i < len(data) && data[i] == ']' {
		*deps = out
		return i + 1, true
	}
	for {
		out = append(out, board.DepResult{})
		d := &out[len(out)-1]
		var ok bool
		i, ok = decodeObject(data, i, depKeys, func(key string, i int) (int, bool) {
			switch key {
			case "task":
				return decodeText(data, i, &d.TaskID)
			case "agent":
				return decodeText(data, i, &d.Agent)
			case "result":
				return decodeText(data, i, &d.Result)
			case "output":
				end, ok := rawValue(data, i, 0)
				d.Output = append(json.RawMessage(nil), data[i:end]...)
				return end, ok
			}
			return i, false
		})
		if !ok || i >= len(data) {
			return i, false
		}
		switch data[i] {
		case ',':
			i++
		case ']':
			*deps = out
			return i + 1, true
		default:
			return i, false
		}
	}
}

// decodeObject decodes the object at data[i] whose keys are among keys,
// each once, in their order, spelled exactly (no escape): field decodes
// the value of key that starts at its second argument. It returns where
// the object ends.
func decodeObject(data []byte, i int, keys []string, field func(key string, i int) (int, bool)) (int, bool) {
	if i >= len(data) || data[i] != '{' {
		return i, false
	}
	i++
	if i < len(data) && data[i] == '}' {
		return i + 1, true
	}
	next := 0
	for {
		if i >= len(data) || data[i] != '"' {
			return i, false
		}
		end := i + 1
		for end < len(data) && data[end] != '"' && data[end] != '\\' {
			end++
		}
		if end+1 >= len(data) || data[end] != '"' || data[end+1] != ':' {
			return i, false
		}
		k := next
		for k < len(keys) && keys[k] != string(data[i+1:end]) {
			k++
		}
		if k == len(keys) {
			return i, false
		}
		next = k + 1
		var ok bool
		if i, ok = field(keys[k], end+2); !ok || i >= len(data) {
			return i, false
		}
		switch data[i] {
		case ',':
			i++
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// decodeTexts decodes an array of strings.
func decodeTexts(data []byte, i int, ss *[]string) (int, bool) {
	if i >= len(data) || data[i] != '[' {
		return i, false
	}
	out := []string{}
	i++
	if i < len(data) && data[i] == ']' {
		*ss = out
		return i + 1, true
	}
	for {
		var s string
		var ok bool
		if i, ok = decodeText(data, i, &s); !ok || i >= len(data) {
			return i, false
		}
		out = append(out, s)
		switch data[i] {
		case ',':
			i++
		case ']':
			*ss = out
			return i + 1, true
		default:
			return i, false
		}
	}
}

// decodeTime decodes a time as time.Time's UnmarshalJSON does, which
// json.Unmarshal calls with the same bytes.
func decodeTime(data []byte, i int, t *time.Time) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return i, false
	}
	_, end, ok := unquote(data, i)
	return end, ok && t.UnmarshalJSON(data[i:end]) == nil
}

// decodeBytes decodes a []byte as json.Unmarshal does: the string's
// standard base64.
func decodeBytes(data []byte, i int, b *[]byte) (int, bool) {
	s, end, ok := unquote(data, i)
	if !ok {
		return i, false
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(out, s)
	*b = out[:n]
	return end, err == nil
}

// decodeText decodes a string as json.Unmarshal does: escapes replaced,
// invalid UTF-8 and lone surrogates by U+FFFD.
func decodeText(data []byte, i int, s *string) (int, bool) {
	t, end, ok := unquote(data, i)
	if ok {
		*s = string(t)
	}
	return end, ok
}

// unquote reads the JSON string at data[i]: its text (data's own bytes
// when it needs no change, else a new slice), where it ends, and whether
// it is a string JSON accepts. The rules are encoding/json's
// (unquoteBytes, Go 1.26), with its scanner's refusal of \' and of
// control characters.
func unquote(data []byte, i int) ([]byte, int, bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, i, false
	}
	start := i + 1
	r := start
	for r < len(data) {
		c := data[r]
		if c == '"' {
			return data[start:r], r + 1, true
		}
		if c == '\\' || c < ' ' {
			break
		}
		if c < utf8.RuneSelf {
			r++
			continue
		}
		if rr, size := utf8.DecodeRune(data[r:]); rr == utf8.RuneError && size == 1 {
			break
		} else {
			r += size
		}
	}
	b := make([]byte, r-start, r-start+64)
	copy(b, data[start:r])
	for r < len(data) {
		switch c := data[r]; {
		case c == '"':
			return b, r + 1, true
		case c < ' ':
			return nil, r, false
		case c == '\\':
			if r+1 >= len(data) {
				return nil, r, false
			}
			switch e := data[r+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := getu4(data[r:])
				if rr < 0 {
					return nil, r, false
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getu4(data[r:])); dec != utf8.RuneError {
						b = utf8.AppendRune(b, dec)
						r += 6
						continue
					}
					rr = utf8.RuneError
				}
				b = utf8.AppendRune(b, rr)
				continue
			default:
				return nil, r, false
			}
			r += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(data[r:])
			b = utf8.AppendRune(b, rr)
			r += size
		}
	}
	return nil, r, false
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
