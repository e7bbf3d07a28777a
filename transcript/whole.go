package transcript

import (
	"slices"

	"github.com/fsdrun/fsd/model"
)

// Whole returns a copy of msgs with nothing a provider would reject as an
// orphan (W2, D5): the calls still in flight are dropped — if the last
// assistant message has calls without results, that message and anything
// after it go, as a pending runBoard call and its siblings must — and so
// are a result whose call is not in msgs and a call that has no result
// (an assistant message left with neither text nor calls goes too).
//
// It is the one place the never-orphan rule is applied to a slice of
// messages that did not come from a Transcript's window: what a worker
// inherits (supply.Conversation), a worker's items bound for its parent's
// history, and a history handed to engine.Generate. A Transcript enforces
// the same rule at the source (Index.Add refuses an orphan result and any
// message while calls await results) and its windows end before the open
// group. The returned slice and its messages' calls are a copy.
func Whole(msgs []model.Message) []model.Message {
	return complete(Settled(msgs))
}

// Settled returns msgs without the calls in flight: cut before the last
// assistant message when some of its calls have no result yet. It shares
// msgs' array and costs the tail after the last assistant message.
func Settled(msgs []model.Message) []model.Message {
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

// complete copies msgs, leaving out results without their call and calls
// without their result.
func complete(window []model.Message) []model.Message {
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
