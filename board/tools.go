package board

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fsdrun/fsd/model"
)

// The board tool names (D1).
const (
	ToolAddTask    = "addTask"
	ToolListTasks  = "listTasks"
	ToolCancelTask = "cancelTask"
	ToolRunBoard   = "runBoard"
)

// Tools returns the board tools' definitions, in a fixed order, for a
// generator that loaded a skill with agents.
func Tools() []model.ToolDef {
	return []model.ToolDef{
		{
			Name: ToolAddTask,
			Description: "Add a task to your task board. It runs when you call runBoard, after every task in deps completed. " +
				"Its worker sees its agent's prompt, the goal, the input and its deps' results, not this conversation.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"goal":{"type":"string","description":"What the worker must do."},` +
				`"id":{"type":"string","description":"Task id; default t1, t2, … in the order added."},` +
				`"assignee":{"type":"string","description":"A loaded skill's agent by name (summarizer) or any skill's as skill/agent (weekly-report/summarizer); omit for the default worker."},` +
				`"deps":{"type":"array","items":{"type":"string"},"description":"Ids of tasks on this board that must complete first, e.g. [\"t1\"]."},` +
				`"input":{"type":"string","description":"Text the worker gets below the goal."}},` +
				`"required":["goal"],"additionalProperties":false}`),
		},
		{
			Name:        ToolListTasks,
			Description: "List every task on your board with its agent, dependencies, status and result or error.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		},
		{
			Name:        ToolCancelTask,
			Description: "Cancel a pending or running task. Tasks that depend on it stay pending.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`),
		},
		{
			Name:        ToolRunBoard,
			Description: "Run every runnable task in dependency order and return when nothing more can run: each task's status and result or error, and status drained, or blocked with the stranded tasks.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		},
	}
}

// IsTool reports whether name is a board tool.
func IsTool(name string) bool {
	switch name {
	case ToolAddTask, ToolListTasks, ToolCancelTask, ToolRunBoard:
		return true
	}
	return false
}

// toolTask is one task as a tool result shows it.
type toolTask struct {
	ID     string   `json:"id"`
	Goal   string   `json:"goal,omitempty"`
	Agent  string   `json:"agent"`
	Deps   []string `json:"deps,omitempty"`
	Status Status   `json:"status"`
	Result string   `json:"result,omitempty"`
	// Output is a typed result, as JSON (Result is then empty).
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
}

func view(t *Task, withGoal bool) toolTask {
	v := toolTask{ID: t.ID, Agent: t.Agent(), Status: t.Status, Result: t.Result, Output: t.Output, Error: t.Error}
	if len(t.Output) > 0 {
		v.Result = ""
	}
	if withGoal {
		v.Goal, v.Deps = t.Goal, t.Deps
	}
	return v
}

// CallTool runs one board tool call and answers the JSON text the model
// reads: {"ok":true,…} or {"ok":false,"error":CODE,"message":…}. It never
// returns an error and never panics on bad arguments (D2). runner is used
// by runBoard only.
func (b *Board) CallTool(ctx context.Context, name string, args json.RawMessage, runner Runner) model.ToolResult {
	switch name {
	case ToolAddTask:
		var a TaskSpec
		if err := decodeArgs(args, &a); err != nil {
			return failure(err)
		}
		if a.Goal == "" {
			return failure(errf(CodeInvalidArguments, "", "addTask needs a goal"))
		}
		t, err := b.Add(a)
		if err != nil {
			return failure(err)
		}
		return success(map[string]any{"id": t.ID, "agent": t.Agent(), "status": t.Status})
	case ToolListTasks:
		if err := decodeArgs(args, &struct{}{}); err != nil {
			return failure(err)
		}
		ts := b.Tasks()
		out := make([]toolTask, len(ts))
		for i := range ts {
			out[i] = view(&ts[i], true)
		}
		return success(map[string]any{"tasks": out})
	case ToolCancelTask:
		var a struct {
			ID string `json:"id"`
		}
		if err := decodeArgs(args, &a); err != nil {
			return failure(err)
		}
		if a.ID == "" {
			return failure(errf(CodeInvalidArguments, "", "cancelTask needs an id"))
		}
		t, err := b.Cancel(a.ID)
		if err != nil {
			return failure(err)
		}
		status := t.Status
		if status == Running {
			status = "cancelling"
		}
		return success(map[string]any{"id": t.ID, "status": status})
	case ToolRunBoard:
		if err := decodeArgs(args, &struct{}{}); err != nil {
			return failure(err)
		}
		rep, err := b.Run(ctx, runner)
		var be *Error
		if errors.As(err, &be) {
			return failure(be)
		}
		out := map[string]any{"status": rep.Status, "tasks": reportTasks(rep)}
		if len(rep.Stranded) > 0 {
			out["stranded"] = rep.Stranded
		}
		if err != nil {
			out["error"] = CodeCancelled
			out["message"] = "the run was cancelled: " + err.Error()
			res := model.ErrorResult(string(CodeCancelled), marshal(false, out))
			res.Fresh = true
			return res
		}
		// What a run reports is work a resumed run does again: its result
		// may differ from the journal's.
		return model.ToolResult{Text: marshal(true, out), Fresh: true}
	default:
		return failure(errf(CodeUnknownTool, "", "%q is not a board tool; the board tools are addTask, listTasks, cancelTask and runBoard", name))
	}
}

func reportTasks(rep Report) []toolTask {
	out := make([]toolTask, len(rep.Tasks))
	for i := range rep.Tasks {
		out[i] = view(&rep.Tasks[i], false)
	}
	return out
}

// decodeArgs decodes a tool call's arguments strictly: unknown fields and
// wrong types are errors the model can read and correct. Empty arguments
// are an empty object.
func decodeArgs(args json.RawMessage, v any) error {
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errf(CodeInvalidArguments, "", "invalid arguments: %v", err)
	}
	if dec.More() {
		return errf(CodeInvalidArguments, "", "invalid arguments: trailing data after the JSON object")
	}
	return nil
}

func success(fields map[string]any) model.ToolResult {
	return model.ToolResult{Text: marshal(true, fields)}
}

func failure(err error) model.ToolResult {
	out := map[string]any{}
	code := "internal"
	var be *Error
	if errors.As(err, &be) {
		code = string(be.Code)
		out["error"] = be.Code
		out["message"] = be.Message
		if be.Task != "" {
			out["task"] = be.Task
		}
		if be.Code == CodeUnknownAssignee {
			roster := be.Roster
			if roster == nil {
				roster = []string{}
			}
			out["roster"] = roster
		}
		if be.Cycle != nil {
			out["cycle"] = be.Cycle
		}
	} else {
		out["error"] = code
		out["message"] = err.Error()
	}
	return model.ErrorResult(code, marshal(false, out))
}

// marshal encodes a tool result with "ok" first, where a model (and a
// person reading a transcript) looks; the other keys follow sorted. The
// values are plain maps, slices and strings, so encoding cannot fail; the
// fallback keeps the never-throw promise anyway.
func marshal(ok bool, fields map[string]any) string {
	// Goals and results are prose for a model: keep <, > and & readable.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fields); err != nil {
		return fmt.Sprintf(`{"ok":false,"error":"internal","message":%q}`, err.Error())
	}
	data := bytes.TrimSpace(buf.Bytes())
	head := `{"ok":false`
	if ok {
		head = `{"ok":true`
	}
	if len(data) <= 2 {
		return head + "}"
	}
	return head + "," + string(data[1:])
}
