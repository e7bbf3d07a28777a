package natsboard

import (
	"encoding/json"

	"github.com/fsdrun/fsd/event"
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
// out is jsonw.Compact already (marshalOutcome checked), so it is not
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
		if compact || jsonw.Compact(r) {
			b = append(b, r...)
		} else {
			b = jsonw.Value(b, r)
		}
	}
	return append(b, ']')
}

// allCompact reports whether every element of rs is jsonw.Compact.
func allCompact(rs []json.RawMessage) bool {
	for _, r := range rs {
		if !jsonw.Compact(r) {
			return false
		}
	}
	return true
}

// unmarshalOutcome is json.Unmarshal(data, out) into a zero out, without
// reflection for an outcome as marshalOutcome writes it: its keys once
// each, in order, as json.Marshal spells them, each value of its field's
// type. Any other input (history items, observations, a null, a key
// spelled otherwise) goes through json.Unmarshal. On the coordinator, the
// outcome's decoding through reflection had been as costly as its
// encoding on the worker.
//
// Its transcript and events share data's bytes (decodeRaws).
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
	end, ok := jsonw.Object(data, 0, outcomeKeys, func(k, i int) (int, bool) {
		switch outcomeKeys[k] {
		case "mac": // checked before: skipped, as long as it is a plain string
			if i < len(data) && data[i] == '"' {
				return jsonw.ScanString(data, i)
			}
			return i, false
		case "v":
			return jsonw.ReadInt(data, i, &out.V)
		case "result":
			return jsonw.ReadString(data, i, &out.Result)
		case "error":
			return jsonw.ReadString(data, i, &out.Error)
		case "usage":
			return event.ReadUsage(data, i, &out.Usage)
		case "worker":
			return jsonw.ReadString(data, i, &out.Worker)
		case "host":
			return jsonw.ReadString(data, i, &out.Host)
		case "pid":
			return jsonw.ReadInt(data, i, &out.PID)
		case "model":
			return jsonw.ReadString(data, i, &out.Model)
		case "journaled":
			return jsonw.ReadInt(data, i, &out.Logged)
		case "journal":
			return decodeRaws(data, i, &out.Log)
		}
		return decodeRaws(data, i, &out.Events)
	})
	return ok && end == len(data)
}

// decodeRaws decodes an array of raw JSON values, each one jsonw.Compact
// (any other goes through json.Unmarshal). The values are data's own
// bytes, capped so that an append to one copies it: an outcome's data is
// the coordinator's (each delivery of the watch and each Get has bytes
// of its own), and copying its transcript again had cost an allocation
// and a copy a task.
func decodeRaws(data []byte, i int, rs *[]json.RawMessage) (int, bool) {
	var small [32]int
	bounds := small[:0] // where each value starts and ends
	end, ok := jsonw.Array(data, i, func(i int) (int, bool) {
		if i >= len(data) || data[i] == 'n' { // a null leaves it to json
			return i, false
		}
		end, ok := jsonw.ScanValue(data, i)
		bounds = append(bounds, i, end)
		return end, ok
	})
	if !ok {
		return end, false
	}
	out := make([]json.RawMessage, len(bounds)/2)
	for k := range out {
		from, to := bounds[2*k], bounds[2*k+1]
		out[k] = json.RawMessage(data[from:to:to])
	}
	*rs = out
	return end, true
}
