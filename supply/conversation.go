package supply

import (
	"slices"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// Conversation returns what a `context-supply: conversation` worker
// inherits (D5): the last turns whole turns of the parent conversation as
// of dispatch (turns <= 0 means spec.DefaultTurns). A turn starts at a user
// message and runs to the next one.
//
// The pending call is never inherited: if the parent's last assistant
// message has calls without results — the runBoard call in flight, maybe
// with sibling calls — that message and anything after it are dropped. The
// window never orphans a call or a result either: a result whose call is
// not in the window, or a call that has no result, is left out. The
// returned slice and its messages are a copy the caller may modify.
func Conversation(parent []model.Message, turns int) []model.Message {
	if turns <= 0 {
		turns = spec.DefaultTurns
	}
	msgs := dropPending(parent)

	// Walk back to the start of the turns-th last user message: the cost
	// is the window, not the whole conversation.
	start, seen := -1, 0
	for i := len(msgs) - 1; i >= 0 && seen < turns; i-- {
		if msgs[i].Role == model.User {
			start, seen = i, seen+1
		}
	}
	if start < 0 {
		return []model.Message{}
	}
	return whole(msgs[start:])
}

// dropPending cuts msgs before the last assistant message when some of its
// calls have no result yet.
func dropPending(msgs []model.Message) []model.Message {
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.Assistant {
			last = i
			break
		}
	}
	if last < 0 || len(msgs[last].Calls) == 0 {
		return msgs
	}
	// Results follow their calls in order, so counting them is enough;
	// matching by id would be fooled by a model that repeats an id.
	results := 0
	for _, m := range msgs[last+1:] {
		if m.Role == model.Tool {
			results++
		}
	}
	if results < len(msgs[last].Calls) {
		return msgs[:last]
	}
	return msgs
}

// whole copies a window, leaving out results without their call and calls
// without their result, so a provider never sees an orphan.
func whole(window []model.Message) []model.Message {
	called := map[string]bool{}
	answered := map[string]bool{}
	for _, m := range window {
		switch m.Role {
		case model.Assistant:
			for _, c := range m.Calls {
				called[c.ID] = true
			}
		case model.Tool:
			answered[m.CallID] = true
		}
	}
	out := make([]model.Message, 0, len(window))
	for _, m := range window {
		switch m.Role {
		case model.Tool:
			if !called[m.CallID] {
				continue
			}
		case model.Assistant:
			if len(m.Calls) > 0 {
				calls := make([]model.ToolCall, 0, len(m.Calls))
				for _, c := range m.Calls {
					if answered[c.ID] {
						calls = append(calls, c)
					}
				}
				m.Calls = calls
				if len(m.Calls) == 0 {
					m.Calls = nil
					if m.Text == "" {
						continue
					}
				}
			}
		}
		m.Calls = slices.Clone(m.Calls)
		out = append(out, m)
	}
	return out
}
