package natsboard

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/internal/jsonw"
	"github.com/fsdrun/fsd/work"
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
func marshalMessage(m *Message) ([]byte, error) { return marshalMessageAfter(m, 0) }

// marshalMessageAfter is marshalMessage written after room bytes left
// for the caller: the message is the buffer's tail from room on.
func marshalMessageAfter(m *Message, room int) ([]byte, error) {
	if !messageAppenderMatches() || len(m.Turns) > 0 || !m.Deadline.IsZero() && !jsonw.TimeOK(m.Deadline) {
		return marshalJSONAfter(m, room)
	}
	n := 512 + len(m.Goal) + len(m.Input) + len(m.Observations) + len(m.Workspace)
	for i := range m.Deps {
		d := &m.Deps[i]
		if !jsonw.Compact(d.Output) && len(d.Output) > 0 {
			return marshalJSONAfter(m, room)
		}
		n += 40 + len(d.TaskID) + len(d.Agent) + len(d.Result) + len(d.Output)
	}
	return appendMessage(make([]byte, room, room+n+n/16), m), nil
}

func marshalJSONAfter(m *Message, room int) ([]byte, error) {
	// A copy goes to json, which keeps the caller's message from escaping
	// to the heap on the appender's path.
	v := *m
	data, err := json.Marshal(&v)
	if err != nil || room == 0 {
		return data, err
	}
	return append(make([]byte, room, room+len(data)), data...), nil
}

// signedMessage is signWith(s, marshalMessage(m), "fsd task"): the
// message is written once, after room for its MAC.
//
// U31: signTask's bytes, written once.
func signedMessage(s *macState, m *Message) ([]byte, error) {
	b, err := marshalMessageAfter(m, macRoom)
	if err != nil {
		return nil, err
	}
	return signAfter(s, b, "fsd task"), nil
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
				if jsonw.Compact(d.Output) {
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
// and reports whether it was. Its strings are pieces of one copy of data
// (jsonw.ReadStringOf): a copy each cost a worker more allocations than
// anything else it does for a task outside the task itself, and they
// live as long as the task, as the message does.
func decodeMessage(data []byte, m *Message) bool {
	src := string(data)
	end, ok := jsonw.Object(data, 0, messageKeys, func(k, i int) (int, bool) {
		switch messageKeys[k] {
		case "mac": // checked by the caller: skipped, as long as it is a plain string
			if i < len(data) && data[i] == '"' {
				return jsonw.ScanString(data, i)
			}
			return i, false
		case "v":
			return jsonw.ReadInt(data, i, &m.V)
		case "run":
			return jsonw.ReadStringOf(data, src, i, &m.Run)
		case "task":
			return jsonw.ReadStringOf(data, src, i, &m.Task)
		case "attempt":
			return jsonw.ReadInt(data, i, &m.Number)
		case "goal":
			return jsonw.ReadStringOf(data, src, i, &m.Goal)
		case "input":
			return jsonw.ReadStringOf(data, src, i, &m.Input)
		case "deps":
			return decodeDeps(data, src, i, &m.Deps)
		case "skill":
			return jsonw.ReadStringOf(data, src, i, &m.Skill)
		case "agent":
			return jsonw.ReadStringOf(data, src, i, &m.Agent)
		case "assignee":
			return jsonw.ReadStringOf(data, src, i, &m.Assignee)
		case "turns":
			// Model messages, rare here: json decodes them.
			end, ok := jsonw.ScanValue(data, i)
			return end, ok && json.Unmarshal(data[i:end], &m.Turns) == nil
		case "observations":
			return jsonw.ReadStringOf(data, src, i, &m.Observations)
		case "model":
			return jsonw.ReadStringOf(data, src, i, &m.Model)
		case "limits":
			return decodeLimits(data, src, i, &m.Limits)
		case "deadline":
			return jsonw.ReadTime(data, i, &m.Deadline)
		case "durability":
			return jsonw.ReadStringOf(data, src, i, (*string)(&m.Durability))
		case "approve":
			return jsonw.ReadStringOf(data, src, i, (*string)(&m.Approve))
		case "approval-timeout":
			var n int
			end, ok := jsonw.ReadInt(data, i, &n)
			m.ApprovalTimeout = time.Duration(n)
			return end, ok
		case "workspace":
			return jsonw.ReadStringOf(data, src, i, &m.Workspace)
		case "handle-key":
			return decodeBytes(data, i, &m.HandleKey)
		case "cache-scope":
			return jsonw.ReadStringOf(data, src, i, &m.CacheScope)
		case "builtins":
			return jsonw.ReadStrings(data, i, &m.Builtins)
		case "bundle":
			return jsonw.ReadStringOf(data, src, i, &m.Bundle)
		case "manifest":
			return jsonw.ReadStringOf(data, src, i, &m.Manifest)
		case "script":
			return jsonw.ReadStringOf(data, src, i, &m.Script)
		case "script-name":
			return jsonw.ReadStringOf(data, src, i, &m.ScriptName)
		case "events":
			return jsonw.ReadStringOf(data, src, i, &m.Events)
		case "approvals":
			return jsonw.ReadStringOf(data, src, i, &m.Approvals)
		case "max-deliveries":
			return jsonw.ReadInt(data, i, &m.MaxDeliveries)
		}
		return jsonw.ReadStringOf(data, src, i, &m.OutcomeKey)
	})
	return ok && end == len(data)
}

func decodeLimits(data []byte, src string, i int, l *work.Limits) (int, bool) {
	return jsonw.Object(data, i, limitsKeys, func(k, i int) (int, bool) {
		switch limitsKeys[k] {
		case "max-steps":
			return jsonw.ReadInt(data, i, &l.MaxSteps)
		case "max-transcript-messages":
			return jsonw.ReadInt(data, i, &l.MaxTranscriptMessages)
		case "max-result-tokens":
			return jsonw.ReadInt(data, i, &l.MaxResultTokens)
		case "readers":
			return jsonw.ReadStringOf(data, src, i, (*string)(&l.Readers))
		case "window-shed":
			return jsonw.ReadStringOf(data, src, i, (*string)(&l.WindowShed))
		case "max-input-tokens":
			return jsonw.ReadInt(data, i, &l.MaxInputTokens)
		}
		return jsonw.ReadInt(data, i, &l.MaxOutputTokens)
	})
}

// decodeDeps decodes the dependencies' results.
func decodeDeps(data []byte, src string, i int, deps *[]board.DepResult) (int, bool) {
	out := []board.DepResult{}
	end, ok := jsonw.Array(data, i, func(i int) (int, bool) {
		out = append(out, board.DepResult{})
		d := &out[len(out)-1]
		return jsonw.Object(data, i, depKeys, func(k, i int) (int, bool) {
			switch depKeys[k] {
			case "task":
				return jsonw.ReadStringOf(data, src, i, &d.TaskID)
			case "agent":
				return jsonw.ReadStringOf(data, src, i, &d.Agent)
			case "result":
				return jsonw.ReadStringOf(data, src, i, &d.Result)
			}
			return jsonw.ReadRaw(data, i, &d.Output)
		})
	})
	if ok {
		*deps = out
	}
	return end, ok
}

// decodeBytes decodes a []byte as json.Unmarshal does: the string's
// standard base64, here only a string without escapes (as json.Marshal
// writes base64).
func decodeBytes(data []byte, i int, b *[]byte) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return i, false
	}
	end, ok := jsonw.ScanString(data, i)
	if !ok || bytes.IndexByte(data[i:end], '\\') >= 0 {
		return i, false
	}
	text := data[i+1 : end-1]
	out := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
	n, err := base64.StdEncoding.Decode(out, text)
	*b = out[:n]
	return end, err == nil
}
