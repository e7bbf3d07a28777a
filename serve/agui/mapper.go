package agui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/serve"
)

// mapper turns one session's events into one AG-UI run's events. It reads
// every event of the session (the board is rebuilt from them) and emits
// once it is live: from the run's turn's first event, or, resuming, after
// the interrupt it answers.
type mapper struct {
	thread, run string
	isLive      bool
	waitFor     map[string]bool // resuming: the answered interrupts; live after the first's request
	answered    map[string]bool // interrupts this run does not raise again
	board       map[string]*task
	order       []string
	text        string // the open text message's id
	textKey     string // its agent and task
	textHasBody bool
	steps       map[string]bool   // open steps
	calls       map[string]string // the last tool call's id by callKey
	seq         int
}

// task is one board task as the state shows it.
type task struct {
	Goal   string   `json:"goal,omitempty"`
	Agent  string   `json:"agent,omitempty"`
	Deps   []string `json:"deps,omitempty"`
	Status string   `json:"status"`
	Result string   `json:"result,omitempty"`
	Error  string   `json:"error,omitempty"`
}

func newMapper(thread, run string) *mapper {
	return &mapper{thread: thread, run: run, board: map[string]*task{}, steps: map[string]bool{}, calls: map[string]string{}, answered: map[string]bool{}}
}

// resuming makes the mapper wait for the request of one of the answered
// interrupts before it goes live.
func (m *mapper) resuming(res []ResumeEntry) {
	m.waitFor = map[string]bool{}
	for _, r := range res {
		m.waitFor[r.InterruptID] = true
		m.answered[r.InterruptID] = true
	}
}

// state is the board as AG-UI state: {"tasks": {id: task}}.
func (m *mapper) state() map[string]any {
	tasks := map[string]any{}
	for id, t := range m.board {
		tasks[id] = t
	}
	return map[string]any{"tasks": tasks}
}

// pointer is the JSON Pointer of task id (RFC 6901 escapes).
func pointer(id string) string {
	return "/tasks/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(id)
}

// live starts emitting: the board's snapshot, and a step for each task
// running (one an interrupt closed reopens).
func (m *mapper) live(out []map[string]any) []map[string]any {
	if m.isLive {
		return out
	}
	m.isLive = true
	out = append(out, map[string]any{"type": "STATE_SNAPSHOT", "snapshot": m.state()})
	for _, id := range m.order {
		if m.board[id].Status == "running" {
			m.steps[id] = true
			out = append(out, map[string]any{"type": "STEP_STARTED", "stepName": id})
		}
	}
	return out
}

// next maps e. end: the run is over (RUN_FINISHED or RUN_ERROR is in out).
// turn, when not 0, is the run's turn: earlier turns' events only feed
// the board. pending lists the approvals waiting, for an interrupt.
func (m *mapper) next(e serve.Event, turn int, pending func() []serve.Approval) (out []map[string]any, end bool) {
	if turn > 0 && e.Turn < turn {
		m.track(e.Event)
		return nil, false
	}
	if !m.isLive {
		if m.waitFor != nil {
			m.track(e.Event)
			if e.Type == event.ApprovalRequested && m.waitFor[approvalID(e.Event)] {
				return m.live(nil), false
			}
			return nil, false
		}
		m.track(e.Event)
		return m.live(nil), false
	}
	return m.emit(e, pending)
}

// track updates the board with e and reports the JSON Patch it made.
func (m *mapper) track(e event.Event) []map[string]any {
	switch e.Type {
	case event.RunStarted:
		if len(m.board) == 0 {
			return nil
		}
		m.board, m.order = map[string]*task{}, nil
		return []map[string]any{{"op": "replace", "path": "/tasks", "value": map[string]any{}}}
	case event.TaskAdded:
		if e.Task == "" {
			return nil
		}
		t := &task{Goal: e.Goal, Agent: e.Agent, Deps: e.Deps, Status: "pending"}
		op := "replace"
		if m.board[e.Task] == nil {
			op = "add"
			m.order = append(m.order, e.Task)
		}
		m.board[e.Task] = t
		return []map[string]any{{"op": op, "path": pointer(e.Task), "value": t}}
	case event.TaskStarted, event.TaskCompleted, event.TaskFailed, event.TaskCancelled:
		t := m.board[e.Task]
		if t == nil {
			t = &task{Agent: e.Agent}
			m.board[e.Task] = t
			m.order = append(m.order, e.Task)
		}
		switch e.Type {
		case event.TaskStarted:
			t.Status = "running"
		case event.TaskCompleted:
			t.Status, t.Result = "completed", e.Result
			if t.Result == "" && len(e.Output) > 0 {
				t.Result = string(e.Output)
			}
		case event.TaskFailed:
			t.Status, t.Error = "failed", e.Err
		case event.TaskCancelled:
			t.Status, t.Error = "cancelled", e.Reason
		}
		return []map[string]any{{"op": "add", "path": pointer(e.Task), "value": t}}
	}
	return nil
}

func (m *mapper) id(kind string) string {
	m.seq++
	return fmt.Sprintf("%s-%s-%d", m.run, kind, m.seq)
}

// closeText ends the open text message.
func (m *mapper) closeText(out []map[string]any) []map[string]any {
	if m.text != "" {
		out = append(out, map[string]any{"type": "TEXT_MESSAGE_END", "messageId": m.text})
		m.text, m.textKey, m.textHasBody = "", "", false
	}
	return out
}

// closeSteps finishes the open steps: a run's end closes them (an
// interrupt pauses a task; the resuming run reopens it).
func (m *mapper) closeSteps(out []map[string]any) []map[string]any {
	for _, id := range m.order {
		if m.steps[id] {
			delete(m.steps, id)
			out = append(out, map[string]any{"type": "STEP_FINISHED", "stepName": id})
		}
	}
	return out
}

// finish ends the run with RUN_FINISHED and outcome.
func (m *mapper) finish(outcome map[string]any, result any) []map[string]any {
	out := m.closeSteps(m.closeText(nil))
	f := map[string]any{"type": "RUN_FINISHED", "threadId": m.thread, "runId": m.run, "outcome": outcome}
	if result != nil {
		f["result"] = result
	}
	return append(out, f)
}

func (m *mapper) emit(e serve.Event, pending func() []serve.Approval) (out []map[string]any, end bool) {
	if patch := m.track(e.Event); len(patch) > 0 {
		out = append(out, map[string]any{"type": "STATE_DELTA", "delta": patch})
	}
	switch e.Type {
	case event.Text:
		key := e.Agent + "\x00" + e.Task
		if m.text != "" && m.textKey != key {
			out = m.closeText(out)
		}
		if !e.Delta && m.text != "" && m.textHasBody {
			// The whole message after its streamed deltas: already sent.
			return m.closeText(out), false
		}
		if m.text == "" {
			m.text, m.textKey = m.id("msg"), key
			start := map[string]any{"type": "TEXT_MESSAGE_START", "messageId": m.text, "role": "assistant"}
			if e.Agent != "" && e.Agent != "host" {
				start["name"] = e.Agent
			}
			out = append(out, start)
		}
		if e.Text != "" {
			m.textHasBody = true
			out = append(out, map[string]any{"type": "TEXT_MESSAGE_CONTENT", "messageId": m.text, "delta": e.Text})
		}
		if !e.Delta {
			out = m.closeText(out)
		}
	case event.TextReset:
		// AG-UI cannot take text back: the retry's text is a new message.
		out = m.closeText(out)
	case event.ToolCall:
		parent := m.text
		out = m.closeText(out)
		id := e.CallID
		if id == "" {
			id = m.id("call")
		}
		m.calls[callKey(e.Event)] = id
		start := map[string]any{"type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": e.Tool}
		if parent != "" {
			start["parentMessageId"] = parent
		}
		args := string(e.Args)
		if args == "" {
			args = "{}"
		}
		out = append(out, start,
			map[string]any{"type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": args},
			map[string]any{"type": "TOOL_CALL_END", "toolCallId": id})
	case event.ToolResult:
		if e.CallID == "" {
			break
		}
		out = m.closeText(out)
		out = append(out, map[string]any{"type": "TOOL_CALL_RESULT", "messageId": m.id("result"), "toolCallId": e.CallID, "content": e.Result, "role": "tool"})
	case event.TaskStarted:
		if !m.steps[e.Task] {
			m.steps[e.Task] = true
			out = append(out, map[string]any{"type": "STEP_STARTED", "stepName": e.Task})
		}
	case event.TaskCompleted, event.TaskFailed, event.TaskCancelled:
		if m.steps[e.Task] {
			delete(m.steps, e.Task)
			out = append(out, map[string]any{"type": "STEP_FINISHED", "stepName": e.Task})
		}
	case event.ApprovalRequested:
		id := approvalID(e.Event)
		if m.answered[id] {
			break
		}
		// Y21: an approval ends the AG-UI run with an interrupt outcome
		// naming every approval waiting; the run's turn goes on waiting.
		interrupts := []map[string]any{interrupt(serve.Approval{CallID: id, Tool: e.Tool, Agent: e.Agent, Args: e.Args}, m.calls[callKey(e.Event)])}
		for _, p := range pending() {
			if p.CallID != id && !m.answered[p.CallID] {
				interrupts = append(interrupts, interrupt(p, ""))
			}
		}
		return append(out, m.finish(map[string]any{"type": "interrupt", "interrupts": interrupts}, nil)...), true
	case event.RunFinished:
		switch e.Status {
		case "failed":
			out = m.closeSteps(m.closeText(out))
			msg := e.Err
			if msg == "" {
				msg = "the turn failed"
			}
			return append(out, map[string]any{"type": "RUN_ERROR", "message": msg, "code": "failed"}), true
		case "cancelled":
			return append(out, m.finish(map[string]any{"type": "cancelled"}, nil)...), true
		}
		var result any
		if e.Answer != "" {
			result = e.Answer
		}
		return append(out, m.finish(map[string]any{"type": "success"}, result)...), true
	}
	return out, false
}

// approvalID is the id an approval.requested's answer takes: the engine
// names it in Approval (FSD_CALL_ID), which need not be the model's call id.
func approvalID(e event.Event) string {
	if e.Approval != "" {
		return e.Approval
	}
	return e.CallID
}

// callKey pairs an approval with the tool call the client saw: the same
// task, agent and tool.
func callKey(e event.Event) string {
	return e.Task + "\x00" + e.Agent + "\x00" + e.Tool
}

// interrupt is the AG-UI interrupt of an approval: its id is the
// approval's, what a resume entry's interruptId names; toolCallId, when
// known, the call the client saw.
func interrupt(a serve.Approval, toolCall string) map[string]any {
	args := json.RawMessage(a.Args)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	in := map[string]any{
		"id":       a.CallID,
		"reason":   InterruptReason,
		"message":  fmt.Sprintf("%s wants to call %s: approve, edit or reject", orHost(a.Agent), a.Tool),
		"metadata": map[string]any{"tool": a.Tool, "agent": orHost(a.Agent), "args": args},
		"responseSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"decision": map[string]any{"enum": []string{serve.Approve, serve.Edit, serve.Reject}},
				"args":     map[string]any{"type": "object"},
				"reason":   map[string]any{"type": "string"},
			},
		},
	}
	if toolCall != "" {
		in["toolCallId"] = toolCall
	}
	return in
}

func orHost(agent string) string {
	if agent == "" {
		return "host"
	}
	return agent
}
