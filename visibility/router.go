package visibility

import (
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// Tags identify whose items a router carries.
type Tags struct {
	Run   string
	Task  string
	Agent string
}

// Router sends one generator's items where its visibility says. It keeps
// no state of its own, so it is as safe for concurrent use as its sink and
// parent func are.
type Router struct {
	v      spec.Visibility
	sink   event.Sink
	tags   Tags
	parent func(model.Message)
	// Now is the clock stamped on events; New sets time.Now.
	Now func() time.Time
}

// New returns a router for one generator. sink receives client events
// (nil drops them); parent appends a message to the parent's transcript
// (nil drops history items). Several workers may append to one parent at
// once: parent must serialize its appends.
func New(v spec.Visibility, sink event.Sink, tags Tags, parent func(model.Message)) *Router {
	return &Router{v: v, sink: sink, tags: tags, parent: parent, Now: time.Now}
}

// Item routes one message the generator produced. With client, an
// assistant message becomes a text event (when it has text) and a
// tool.call event per call, and a tool message a tool.result event (error
// set when it failed). With history, the message is appended to the
// parent's transcript as it is. User messages are the generator's input
// (its task), not its items: they go nowhere, so a worker never starts a
// new turn in its parent's transcript.
func (r *Router) Item(m model.Message) {
	if m.Role == model.User {
		return
	}
	if r.v.Client && r.sink != nil {
		base := event.Event{Time: r.Now(), Run: r.tags.Run, Task: r.tags.Task, Agent: r.tags.Agent}
		each(m, &base, r.sink.Emit)
	}
	if r.v.History && r.parent != nil {
		r.parent(m)
	}
}
