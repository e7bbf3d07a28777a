package supply

import (
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/transcript"
)

// Conversation returns what a `context-supply: conversation` worker
// inherits (D5): the last turns whole turns of the parent conversation as
// of dispatch; turns <= 0 means every whole turn (the engine passes the
// agent's defaulted `turns:`). A turn starts at a user message and runs to
// the next one.
//
// The pending call is never inherited and nothing is orphaned: the turns
// go through transcript.Whole, so the parent's calls in flight (the
// runBoard call, maybe with sibling calls) and anything after them are
// dropped, and so are a result without its call and a call without its
// result. The returned slice and its messages are a copy the caller may
// modify.
func Conversation(parent []model.Message, turns int) []model.Message {
	msgs := transcript.Settled(parent)
	if turns <= 0 {
		turns = len(msgs)
	}
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
	return transcript.Whole(msgs[start:])
}
