package event

import (
	"encoding/json"

	"github.com/fsdrun/fsd/internal/jsonw"
	"github.com/fsdrun/fsd/model"
)

// Unmarshal is json.Unmarshal(data, e) into a zero e, without reflection
// for an event as AppendJSON writes it: its keys once each, in order, as
// json.Marshal spells them, each value of its field's type. Any other
// input (an event with attempts, a null, a key spelled otherwise, spaces)
// goes through json.Unmarshal. A coordinator decodes every event its
// workers send, several a task: through reflection that had been a
// tenth of its CPU per remote task.
//
// U20: what json.Unmarshal decodes, or json.Unmarshal itself.
func Unmarshal(data []byte, e *Event) error {
	*e = Event{}
	if end, ok := jsonw.Object(data, 0, eventKeys, func(k, i int) (int, bool) { return readEventField(data, i, k, e) }); ok && end == len(data) {
		return nil
	}
	// Into a variable of its own, which escapes to json on this path
	// only: e stays where its caller has it.
	var v Event
	err := json.Unmarshal(data, &v)
	*e = v
	return err
}

// eventKeys are Event's keys in the order json.Marshal writes them, those
// Unmarshal reads (attempts, rare, are left to json.Unmarshal).
var eventKeys = []string{"type", "time", "run", "task", "agent", "text", "delta", "tool", "call_id", "args", "result", "output",
	"error", "skill", "version", "reason", "at", "tokens", "messages", "usage", "cost", "status", "goal", "deps", "answer", "err",
	"elapsed_ms", "approval", "by", "progress", "replayed", "worker"}

// readEventField reads the value of eventKeys[k] at data[i] into e.
func readEventField(data []byte, i, k int, e *Event) (int, bool) {
	switch eventKeys[k] {
	case "type":
		return jsonw.ReadString(data, i, &e.Type)
	case "time":
		return jsonw.ReadTime(data, i, &e.Time)
	case "run":
		return jsonw.ReadString(data, i, &e.Run)
	case "task":
		return jsonw.ReadString(data, i, &e.Task)
	case "agent":
		return jsonw.ReadString(data, i, &e.Agent)
	case "text":
		return jsonw.ReadString(data, i, &e.Text)
	case "delta":
		return jsonw.ReadTrue(data, i, &e.Delta)
	case "tool":
		return jsonw.ReadString(data, i, &e.Tool)
	case "call_id":
		return jsonw.ReadString(data, i, &e.CallID)
	case "args":
		return jsonw.ReadRaw(data, i, &e.Args)
	case "result":
		return jsonw.ReadString(data, i, &e.Result)
	case "output":
		return jsonw.ReadRaw(data, i, &e.Output)
	case "error":
		return jsonw.ReadTrue(data, i, &e.Error)
	case "skill":
		return jsonw.ReadString(data, i, &e.Skill)
	case "version":
		return jsonw.ReadString(data, i, &e.Version)
	case "reason":
		return jsonw.ReadString(data, i, &e.Reason)
	case "at":
		return jsonw.ReadString(data, i, &e.At)
	case "tokens":
		e.Tokens = new(Tokens)
		return readTokens(data, i, e.Tokens)
	case "messages":
		return jsonw.ReadInt(data, i, &e.Messages)
	case "usage":
		e.Usage = new(model.Usage)
		return ReadUsage(data, i, e.Usage)
	case "cost":
		return jsonw.ReadFloat(data, i, &e.Cost)
	case "status":
		return jsonw.ReadString(data, i, &e.Status)
	case "goal":
		return jsonw.ReadString(data, i, &e.Goal)
	case "deps":
		return jsonw.ReadStrings(data, i, &e.Deps)
	case "answer":
		return jsonw.ReadString(data, i, &e.Answer)
	case "err":
		return jsonw.ReadString(data, i, &e.Err)
	case "elapsed_ms":
		return jsonw.ReadFloat(data, i, &e.Elapsed)
	case "approval":
		return jsonw.ReadString(data, i, &e.Approval)
	case "by":
		return jsonw.ReadString(data, i, &e.By)
	case "progress":
		e.Progress = new(Progress)
		return jsonw.Object(data, i, progressKeys, func(k, i int) (int, bool) {
			return jsonw.ReadFloat(data, i, [...]*float64{&e.Progress.Done, &e.Progress.Total}[k])
		})
	case "replayed":
		return jsonw.ReadTrue(data, i, &e.Replayed)
	case "worker":
		e.Worker = new(Worker)
		return readWorker(data, i, e.Worker)
	}
	return i, false
}

var (
	progressKeys = []string{"done", "total"}
	tokensKeys   = []string{"context", "window", "tools", "total"}
	usageKeys    = []string{"input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens", "reasoning_tokens", "estimated"}
	workerKeys   = []string{"name", "host", "pid"}
)

func readTokens(data []byte, i int, t *Tokens) (int, bool) {
	return jsonw.Object(data, i, tokensKeys, func(k, i int) (int, bool) {
		return jsonw.ReadInt(data, i, [...]*int{&t.Context, &t.Window, &t.Tools, &t.Total}[k])
	})
}

// ReadUsage reads u at data[i] as AppendUsage writes it (jsonw.Object's
// form), and returns where it ends.
func ReadUsage(data []byte, i int, u *model.Usage) (int, bool) {
	return jsonw.Object(data, i, usageKeys, func(k, i int) (int, bool) {
		if usageKeys[k] == "estimated" {
			return jsonw.ReadTrue(data, i, &u.Estimated)
		}
		return jsonw.ReadInt(data, i, [...]*int{&u.InputTokens, &u.OutputTokens, &u.CachedInputTokens, &u.CacheWriteTokens, &u.ReasoningTokens}[k])
	})
}

func readWorker(data []byte, i int, w *Worker) (int, bool) {
	return jsonw.Object(data, i, workerKeys, func(k, i int) (int, bool) {
		switch workerKeys[k] {
		case "name":
			return jsonw.ReadString(data, i, &w.Name)
		case "host":
			return jsonw.ReadString(data, i, &w.Host)
		}
		return jsonw.ReadInt(data, i, &w.PID)
	})
}
