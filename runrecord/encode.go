package runrecord

import (
	"encoding/json"
	"fmt"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/jsonw"
)

// appendLine appends l and a newline, as json.Marshal encodes l: every
// model call writes two lines, so they are encoded without reflection.
//
// F1: what json.Marshal writes, or json.Marshal itself.
func appendLine(buf []byte, l *Line) []byte {
	if !lineAppenderMatches() || !jsonw.FloatOK(l.Cost) || !jsonw.TimeOK(l.Time) {
		b, err := json.Marshal(*l)
		if err != nil {
			return buf
		}
		return append(append(buf, b...), '\n')
	}
	return append(appendLineJSON(buf, l), '\n')
}

// lineAppenderMatches is false when Line has a field appendLineJSON does
// not write: appendLine then stays correct through json.Marshal, and
// TestAppendLine fails.
var lineAppenderMatches = jsonw.MatchesOnce(appendLineJSON)

func appendLineJSON(b []byte, l *Line) []byte {
	b = jsonw.String(jsonw.Key(append(b, '{'), "kind"), l.Kind)
	b = jsonw.OptString(b, "hash", l.Hash)
	if l.Text != nil {
		b = jsonw.String(jsonw.Key(b, "text"), *l.Text)
	}
	if t := l.Tool; t != nil {
		b = jsonw.String(jsonw.Key(append(jsonw.Key(b, "tool"), '{'), "name"), t.Name)
		b = jsonw.String(jsonw.Key(b, "description"), t.Description)
		b = jsonw.String(jsonw.Key(b, "parameters"), t.Parameters)
		b = append(b, '}')
	}
	b = jsonw.OptString(b, "gen", l.Gen)
	b = jsonw.OptString(b, "task", l.Task)
	b = jsonw.OptString(b, "agent", l.Agent)
	b = jsonw.Int(jsonw.Key(b, "step"), int64(l.Step))
	if !l.Time.IsZero() {
		b = jsonw.Time(jsonw.Key(b, "time"), l.Time)
	}
	b = jsonw.OptString(b, "context", l.Context)
	if len(l.Tools) > 0 {
		b = jsonw.Strings(jsonw.Key(b, "tools"), l.Tools)
	}
	if len(l.Window) > 0 {
		b = append(jsonw.Key(b, "window"), '[')
		for i, s := range l.Window {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonw.Int(jsonw.Key(append(b, '{'), "from"), int64(s.From))
			b = append(jsonw.Int(jsonw.Key(b, "to"), int64(s.To)), '}')
		}
		b = append(b, ']')
	}
	if len(l.Stubs) > 0 {
		b = jsonw.Value(jsonw.Key(b, "stubs"), l.Stubs) // rare; json orders the keys
	}
	b = jsonw.OptString(b, "status", l.Status)
	b = jsonw.Int(jsonw.Key(b, "at"), int64(l.At))
	if l.Tokens != nil {
		b = event.AppendTokens(jsonw.Key(b, "tokens"), l.Tokens)
	}
	if l.Held != nil {
		b = event.AppendUsage(jsonw.Key(b, "held"), l.Held)
	}
	if l.Usage != nil {
		b = event.AppendUsage(jsonw.Key(b, "usage"), l.Usage)
	}
	if l.Cost != 0 {
		b = jsonw.Float(jsonw.Key(b, "cost"), l.Cost)
	}
	b = jsonw.OptString(b, "error", l.Error)
	return append(b, '}')
}

// appendBoard appends board.json: every task as json.Marshal encodes it,
// one task a line, so a person can read and grep it and a reader decodes
// it as one JSON document.
//
// F1, F3: each task as json.Marshal writes it, one a line.
func appendBoard(b []byte, tasks []board.Task) ([]byte, error) {
	b = append(b, `{"tasks":[`...)
	for i := range tasks {
		t := &tasks[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		if !taskAppenderMatches() || (len(t.Output) > 0 && !json.Valid(t.Output)) || !jsonw.TimeOK(t.Started) || !jsonw.TimeOK(t.Finished) {
			tb, err := json.Marshal(*t)
			if err != nil {
				return nil, fmt.Errorf("task %s: %w", t.ID, err)
			}
			b = append(b, tb...)
			continue
		}
		b = appendTask(b, t)
	}
	if len(tasks) > 0 {
		b = append(b, '\n')
	}
	return append(b, "]}\n"...), nil
}

// taskAppenderMatches is false when board.Task has a field appendTask
// does not write: appendBoard then stays correct through json.Marshal,
// and TestAppendBoard fails.
var taskAppenderMatches = jsonw.MatchesOnce(appendTask)

// appendTask is board.Task's MarshalJSON without reflection: a typed
// result is written once, as output.
func appendTask(b []byte, t *board.Task) []byte {
	b = jsonw.String(jsonw.Key(append(b, '{'), "id"), t.ID)
	b = jsonw.String(jsonw.Key(b, "goal"), t.Goal)
	b = jsonw.OptString(b, "input", t.Input)
	b = jsonw.OptString(b, "assignee", t.Assignee)
	if len(t.Deps) > 0 {
		b = jsonw.Strings(jsonw.Key(b, "deps"), t.Deps)
	}
	b = jsonw.String(jsonw.Key(b, "status"), string(t.Status))
	if len(t.Output) == 0 {
		b = jsonw.OptString(b, "result", t.Result)
	} else {
		b = jsonw.Value(jsonw.Key(b, "output"), t.Output)
	}
	b = jsonw.OptString(b, "error", t.Error)
	if t.Attempts != 0 {
		b = jsonw.Int(jsonw.Key(b, "attempts"), int64(t.Attempts))
	}
	if !t.Started.IsZero() {
		b = jsonw.Time(jsonw.Key(b, "started"), t.Started)
	}
	if !t.Finished.IsZero() {
		b = jsonw.Time(jsonw.Key(b, "finished"), t.Finished)
	}
	return append(b, '}')
}
