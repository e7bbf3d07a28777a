package tool

import (
	"context"
	"encoding/json"

	"github.com/fsdrun/fsd/model"
)

// Hooks are what a call in flight may ask of the run beyond its
// arguments: report how far it got, ask the person running it a
// question, ask the run's model for a completion. The engine puts them in
// the call's context (WithHooks); a tool that speaks a protocol with such
// requests (an MCP server's progress, elicitation and sampling) reaches
// them with HooksFrom. A nil field is not offered: the tool says so to
// its peer.
type Hooks struct {
	// Progress receives the call's progress reports, in order.
	Progress func(Progress)
	// Ask puts a question to the person running the call and waits for
	// the answer like an approval does.
	Ask func(ctx context.Context, q Question) (Answer, error)
	// Media receives the images and audio the call answered besides its
	// text (an MCP tool's image content), before Call returns: the engine
	// hands them to a model that takes them; the result's text says what
	// they are for one that does not.
	Media func([]model.Media)
	// Sample asks the run's model on the call's behalf, approved and
	// counted against the run's budget like the run's own requests.
	Sample func(ctx context.Context, req *model.Request) (*model.Response, error)
}

// Progress is one progress report of a call in flight.
type Progress struct {
	// Done is how far the call got; Total, when known, where it ends.
	Done  float64
	Total float64
	// Message says what it is doing now ("" when the report has none).
	Message string
}

// Question is what a call asks a person: a message and the JSON Schema
// the answer must match (an object of flat, primitive properties).
type Question struct {
	Message string
	Schema  json.RawMessage
}

// Answer is a person's answer to a Question. Action is "accept" (Content
// matches the question's schema), "decline" or "cancel".
type Answer struct {
	Action  string
	Content map[string]any
}

type hooksKey struct{}

// WithHooks returns ctx carrying h for the call it is passed to.
func WithHooks(ctx context.Context, h Hooks) context.Context {
	return context.WithValue(ctx, hooksKey{}, h)
}

// HooksFrom returns the hooks WithHooks put in ctx; the zero Hooks offer
// nothing.
func HooksFrom(ctx context.Context) Hooks {
	h, _ := ctx.Value(hooksKey{}).(Hooks)
	return h
}
