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
		return rawItems(raw, i+1, depth, '}')
	case c == '[':
		return rawItems(raw, i+1, depth, ']')
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

// rawItems checks an object's members (end '}') or an array's elements
// (end ']') from raw[i], after the opening, to the end.
func rawItems(raw []byte, i, depth int, end byte) (int, bool) {
	if i < len(raw) && raw[i] == end {
		return i + 1, true
	}
	for {
		var ok bool
		if end == '}' {
			if i >= len(raw) || raw[i] != '"' {
				return i, false
			}
			if i, ok = rawString(raw, i); !ok || i >= len(raw) || raw[i] != ':' {
				return i, false
			}
			i++
		}
		if i, ok = rawValue(raw, i, depth+1); !ok || i >= len(raw) {
			return i, false
		}
		switch raw[i] {
		case ',':
			i++
		case end:
			return i + 1, true
		default:
			return i, false
		}
	}
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

// unmarshalOutcome is json.Unmarshal(data, out) into a zero out, without
// reflection for an outcome as marshalOutcome writes it: its keys once
// each, in order, as json.Marshal spells them, each value of its field's
// type. Any other input (history items, observations, a null, a key
// spelled otherwise) goes through json.Unmarshal. On the coordinator, the
// outcome's decoding through reflection had been as costly as its
// encoding on the worker.
//
// U13: what json.Unmarshal decodes, or json.Unmarshal itself.
func unmarshalOutcome(data []byte, out *Outcome) error {
	if !decodeOutcome(data, out) {
		*out = Outcome{}
		return json.Unmarshal(data, out)
	}
	return nil
}

// outcomeKeys are Outcome's keys in the order json.Marshal writes them,
// those decodeOutcome reads, after the MAC a signed outcome begins with
// (auth.go; not Outcome's, json.Unmarshal skips it).
var outcomeKeys = []string{"mac", "v", "result", "error", "usage", "worker", "host", "pid", "model", "journaled", "journal", "events"}

// decodeOutcome decodes data into out when it is in marshalOutcome's
// form, and reports whether it was.
func decodeOutcome(data []byte, out *Outcome) bool {
	if len(data) < 2 || data[0] != '{' {
		return false
	}
	i, next := 1, 0
	for {
		if i >= len(data) || data[i] != '"' {
			return false
		}
		end := i + 1
		for end < len(data) && data[end] != '"' && data[end] != '\\' {
			end++
		}
		if end+1 >= len(data) || data[end] != '"' || data[end+1] != ':' {
			return false
		}
		key := string(data[i+1 : end])
		k := next
		for k < len(outcomeKeys) && outcomeKeys[k] != key {
			k++
		}
		if k == len(outcomeKeys) {
			return false
		}
		next = k + 1
		i = end + 2
		var ok bool
		switch key {
		case "mac": // checked before: skipped, as long as it is a plain string
			ok = i < len(data) && data[i] == '"'
			if ok {
				i, ok = rawString(data, i)
			}
		case "v":
			i, ok = decodeInt(data, i, &out.V)
		case "result":
			i, ok = decodeString(data, i, &out.Result)
		case "error":
			i, ok = decodeString(data, i, &out.Error)
		case "usage":
			i, ok = decodeUsage(data, i, out)
		case "worker":
			i, ok = decodeString(data, i, &out.Worker)
		case "host":
			i, ok = decodeString(data, i, &out.Host)
		case "pid":
			i, ok = decodeInt(data, i, &out.PID)
		case "model":
			i, ok = decodeString(data, i, &out.Model)
		case "journaled":
			i, ok = decodeInt(data, i, &out.Logged)
		case "journal":
			i, ok = decodeRaws(data, i, &out.Log)
		case "events":
			i, ok = decodeRaws(data, i, &out.Events)
		}
		if !ok || i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i++
		case '}':
			return i+1 == len(data)
		default:
			return false
		}
	}
}

// decodeUsage decodes model.Usage's object as appendOutcome writes it.
func decodeUsage(data []byte, i int, out *Outcome) (int, bool) {
	u := &out.Usage
	fields := []struct {
		key string
		n   *int
	}{{`"input_tokens":`, &u.InputTokens}, {`"output_tokens":`, &u.OutputTokens}, {`"cached_input_tokens":`, &u.CachedInputTokens},
		{`"cache_write_tokens":`, &u.CacheWriteTokens}, {`"reasoning_tokens":`, &u.ReasoningTokens}}
	if i >= len(data) || data[i] != '{' {
		return i, false
	}
	sep := byte('{')
	for _, f := range fields {
		if data[i] != sep || len(data)-i-1 < len(f.key) || string(data[i+1:i+1+len(f.key)]) != f.key {
			continue
		}
		var ok bool
		if i, ok = decodeInt(data, i+1+len(f.key), f.n); !ok || i >= len(data) {
			return i, false
		}
		sep = ','
	}
	if sep == ',' && len(data)-i >= len(`,"estimated":true`) && string(data[i:i+len(`,"estimated":true`)]) == `,"estimated":true` {
		u.Estimated = true
		i += len(`,"estimated":true`)
	}
	if sep != ',' || i >= len(data) || data[i] != '}' {
		return i, false
	}
	return i + 1, true
}

// decodeInt decodes an integer that fits an int, nothing else.
func decodeInt(data []byte, i int, n *int) (int, bool) {
	j := i
	if j < len(data) && data[j] == '-' {
		j++
	}
	start := j
	for j < len(data) && data[j] >= '0' && data[j] <= '9' {
		j++
	}
	if j == start || j-start > 18 || data[start] == '0' && j-start > 1 {
		return i, false
	}
	v := 0
	for _, c := range data[start:j] {
		v = v*10 + int(c-'0')
	}
	if data[i] == '-' {
		v = -v
	}
	*n = v
	return j, true
}

// decodeString decodes a string: itself when it holds no escape and is
// valid UTF-8, else through json.Unmarshal (which unescapes it and
// replaces invalid UTF-8 as it does in any string).
func decodeString(data []byte, i int, s *string) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return i, false
	}
	end, ok := rawString(data, i)
	if !ok {
		// rawString refuses what needs escaping on output, which a
		// string may hold on input: the token's end is found again.
		end = i + 1
		for end < len(data) && data[end] != '"' {
			if data[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(data) {
			return i, false
		}
		end++
	}
	tok := data[i:end]
	plain := ok
	for _, c := range tok {
		if c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		*s = string(tok[1 : len(tok)-1])
		return end, true
	}
	return end, json.Unmarshal(tok, s) == nil
}

// decodeRaws decodes an array of raw JSON values, each one compactJSON
// (any other goes through json.Unmarshal). The values share one copy of
// their bytes.
func decodeRaws(data []byte, i int, rs *[]json.RawMessage) (int, bool) {
	if i >= len(data) || data[i] != '[' {
		return i, false
	}
	start := i
	var ends []int
	i++
	if i < len(data) && data[i] == ']' {
		*rs = []json.RawMessage{}
		return i + 1, true
	}
	for {
		if i >= len(data) || data[i] == 'n' { // a null leaves it to json
			return i, false
		}
		var ok bool
		if i, ok = rawValue(data, i, 0); !ok || i >= len(data) {
			return i, false
		}
		ends = append(ends, i-start)
		switch data[i] {
		case ',':
			i++
		case ']':
			buf := append([]byte(nil), data[start:i]...)
			out := make([]json.RawMessage, len(ends))
			from := 1
			for k, e := range ends {
				out[k] = json.RawMessage(buf[from:e:e])
				from = e + 1
			}
			*rs = out
			return i + 1, true
		default:
			return i, false
		}
	}
}
