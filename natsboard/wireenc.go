package natsboard

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/fsdrun/fsd/internal/jsonw"
)

// marshalOutcome is json.Marshal(out), without reflection for the
// outcomes workers commit most: no history items, no observations, and a
// transcript and events already as json.Marshal writes raw JSON (the
// transcript's and the events' own encoders wrote them). Anything else
// goes through json.Marshal, which also refuses raw JSON that is not
// JSON. Through reflection, the outcome's encoding had been a tenth of a
// worker's CPU per task, most of it json compacting raw JSON that was
// compact already.
//
// U12: the bytes are json.Marshal's, or json.Marshal itself.
func marshalOutcome(out *Outcome) ([]byte, error) {
	if !outcomeAppenderMatches() || len(out.Items) > 0 || len(out.Observations) > 0 ||
		!allCompact(out.Log) || !allCompact(out.Events) {
		return json.Marshal(out)
	}
	return appendOutcomeChecked(make([]byte, 0, outcomeSize(out)), out, true), nil
}

// outcomeAppenderMatches is false when Outcome, work.Outcome or
// model.Usage has a field appendOutcome does not write: marshalOutcome
// then stays correct through json.Marshal, and TestAppendOutcome fails.
var outcomeAppenderMatches = jsonw.MatchesOnce(appendOutcome)

// outcomeSize is about what appendOutcome writes for out: one allocation
// for most outcomes.
func outcomeSize(out *Outcome) int {
	n := 256 + len(out.Result) + len(out.Error) + len(out.Worker) + len(out.Host) + len(out.Model)
	for _, r := range out.Log {
		n += len(r) + 1
	}
	for _, r := range out.Events {
		n += len(r) + 1
	}
	return n + n/16 // room for escapes
}

func appendOutcome(b []byte, out *Outcome) []byte { return appendOutcomeChecked(b, out, false) }

// appendOutcomeChecked is appendOutcome; compact says every raw value of
// out is compactJSON already (marshalOutcome checked), so it is not
// checked twice.
func appendOutcomeChecked(b []byte, out *Outcome, compact bool) []byte {
	b = jsonw.Int(jsonw.Key(append(b, '{'), "v"), int64(out.V))
	b = jsonw.OptString(b, "result", out.Result)
	b = jsonw.OptString(b, "error", out.Error)
	if len(out.Items) > 0 {
		b = jsonw.Value(jsonw.Key(b, "items"), out.Items)
	}
	if len(out.Observations) > 0 {
		b = jsonw.Value(jsonw.Key(b, "observations"), out.Observations)
	}
	u := &out.Usage
	b = jsonw.Int(jsonw.Key(append(jsonw.Key(b, "usage"), '{'), "input_tokens"), int64(u.InputTokens))
	b = jsonw.Int(jsonw.Key(b, "output_tokens"), int64(u.OutputTokens))
	b = optInt(b, "cached_input_tokens", u.CachedInputTokens)
	b = optInt(b, "cache_write_tokens", u.CacheWriteTokens)
	b = optInt(b, "reasoning_tokens", u.ReasoningTokens)
	b = append(jsonw.OptTrue(b, "estimated", u.Estimated), '}')
	b = jsonw.OptString(b, "worker", out.Worker)
	b = jsonw.OptString(b, "host", out.Host)
	b = optInt(b, "pid", out.PID)
	b = jsonw.OptString(b, "model", out.Model)
	b = optInt(b, "journaled", out.Logged)
	b = appendRaws(b, "journal", out.Log, compact)
	b = appendRaws(b, "events", out.Events, compact)
	return append(b, '}')
}

// optInt appends the field key: n, unless n is 0: an int field tagged
// omitempty.
func optInt(b []byte, key string, n int) []byte {
	if n == 0 {
		return b
	}
	return jsonw.Int(jsonw.Key(b, key), int64(n))
}

// appendRaws appends the field key: rs, unless rs is empty (omitempty):
// each element as it is when it is compact (allCompact), else as
// json.Marshal writes it (compact: all are).
func appendRaws(b []byte, key string, rs []json.RawMessage, compact bool) []byte {
	if len(rs) == 0 {
		return b
	}
	b = append(jsonw.Key(b, key), '[')
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		if compact || compactJSON(r) {
			b = append(b, r...)
		} else {
			b = jsonw.Value(b, r)
		}
	}
	return append(b, ']')
}

// allCompact reports whether every element of rs is compactJSON.
func allCompact(rs []json.RawMessage) bool {
	for _, r := range rs {
		if !compactJSON(r) {
			return false
		}
	}
	return true
}

// compactJSON reports whether raw is one JSON value written as
// json.Marshal writes raw JSON: no space outside strings, and <, >, &,
// U+2028 and U+2029 escaped. Such a value json.Marshal copies as it is.
// Invalid UTF-8 and nesting deeper than maxRawDepth report false too (the
// caller leaves those to json.Marshal): a false is never wrong, only
// slower.
func compactJSON(raw []byte) bool {
	end, ok := rawValue(raw, 0, 0)
	return ok && end == len(raw)
}

const maxRawDepth = 256

// rawValue checks the value starting at raw[i] and returns where it ends.
func rawValue(raw []byte, i, depth int) (int, bool) {
	if i >= len(raw) || depth > maxRawDepth {
		return i, false
	}
	switch c := raw[i]; {
	case c == '{':
		i++
		if i < len(raw) && raw[i] == '}' {
			return i + 1, true
		}
		for {
			var ok bool
			if i >= len(raw) || raw[i] != '"' {
				return i, false
			}
			if i, ok = rawString(raw, i); !ok || i >= len(raw) || raw[i] != ':' {
				return i, false
			}
			if i, ok = rawValue(raw, i+1, depth+1); !ok || i >= len(raw) {
				return i, false
			}
			switch raw[i] {
			case ',':
				i++
			case '}':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '[':
		i++
		if i < len(raw) && raw[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = rawValue(raw, i, depth+1); !ok || i >= len(raw) {
				return i, false
			}
			switch raw[i] {
			case ',':
				i++
			case ']':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '"':
		return rawString(raw, i)
	case c == 't':
		return rawWord(raw, i, "true")
	case c == 'f':
		return rawWord(raw, i, "false")
	case c == 'n':
		return rawWord(raw, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return rawNumber(raw, i)
	}
	return i, false
}

func rawWord(raw []byte, i int, w string) (int, bool) {
	if len(raw)-i < len(w) || string(raw[i:i+len(w)]) != w {
		return i, false
	}
	return i + len(w), true
}

// rawNumber checks JSON's number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func rawNumber(raw []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		j := i
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
			j++
		}
		return j, j > i
	}
	if raw[i] == '-' {
		i++
	}
	if i < len(raw) && raw[i] == '0' {
		i++
	} else {
		var ok bool
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	if i < len(raw) && raw[i] == '.' {
		var ok bool
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		if i < len(raw) && (raw[i] == '+' || raw[i] == '-') {
			i++
		}
		var ok bool
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}

// rawString checks the string starting at raw[i] (its quote) and returns
// where it ends: valid escapes, no control character, and nothing
// json.Marshal would escape (<, >, &, U+2028, U+2029) nor invalid UTF-8.
func rawString(raw []byte, i int) (int, bool) {
	for i++; i < len(raw); {
		c := raw[i]
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			return i, false
		case c == '\\':
			if i+1 >= len(raw) {
				return i, false
			}
			switch raw[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(raw) {
					return i, false
				}
				for _, h := range raw[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return i, false
					}
				}
				i += 6
			default:
				return i, false
			}
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return i, false
			}
			i += size
		}
	}
	return i, false
}
