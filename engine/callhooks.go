package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tool"
)

// hooks are what call c (FSD_CALL_ID id) may ask of the run while it is
// in flight: its progress reports become tool.progress events of the
// generator's task, its questions wait for a person like approvals (ask),
// and the media it answers go with its result's message.
//
// P1: progress becomes events of the call.
func (g *generator) hooks(c model.ToolCall, id string) tool.Hooks {
	var asked, sampled atomic.Int32
	return tool.Hooks{Media: func(m []model.Media) { g.media = m }, Ask: func(ctx context.Context, q tool.Question) (tool.Answer, error) {
		return g.ask(ctx, c, func() string { return fmt.Sprintf("%s/ask%d", id, asked.Add(1)) }, q)
	}, Sample: func(ctx context.Context, req *model.Request) (*model.Response, error) {
		return g.sample(ctx, c, fmt.Sprintf("%s/sample%d", id, sampled.Add(1)), req)
	}, Progress: func(p tool.Progress) {
		if g.emit == nil {
			return
		}
		g.emit(event.Event{Type: event.ToolProgress, Task: g.caller.TaskID, Agent: g.caller.Agent, Tool: c.Name, CallID: c.ID,
			Text: p.Message, Progress: &event.Progress{Done: p.Done, Total: p.Total}})
	}}
}

// mediaFor leaves out of a request's messages the images and audio the
// model does not take, saying so in the message's text (which already
// names the artifact that keeps them); msgs is not changed.
//
// P2: media go only to a model whose capabilities take them.
func mediaFor(msgs []model.Message, caps model.Capabilities) []model.Message {
	return model.FitMedia(msgs, caps)
}

// ask puts a question a call asks (an MCP server's elicitation) to a
// person as a call waiting for approval does: it is pending under its own
// id (the call's FSD_CALL_ID and /askN), shown by the terminal's prompt,
// listed in run.json and answered by fsd approve. Its arguments are the
// answer's fields at their defaults: approving accepts them, an edit gives
// other values, a rejection declines. An answer that does not match the
// question's schema is asked again (up to maxAsks times in all) with what
// was wrong, then declined. Mode auto accepts the defaults, deny declines.
//
// P5: a question waits like an approval; the answer matches its schema.
func (g *generator) ask(ctx context.Context, c model.ToolCall, next func() string, q tool.Question) (tool.Answer, error) {
	if g.appr == nil {
		return tool.Answer{Action: "decline"}, nil
	}
	form, err := tool.CompileInput(c.Name, json.RawMessage(q.Schema))
	if err != nil {
		return tool.Answer{Action: "decline"}, nil
	}
	fields, err := json.Marshal(defaults(q.Schema))
	if err != nil {
		return tool.Answer{}, err
	}
	what := fmt.Sprintf("%s asks: %s", c.Name, q.Message)
	for range maxAsks {
		gate, err := g.appr.Check(ctx, runrecord.PendingCall{Call: next(), Tool: what, Args: fields, Task: g.caller.TaskID, Agent: g.caller.Agent},
			approval.Tool{Own: spec.ApproveAlways, Input: q.Schema})
		if err != nil {
			return tool.Answer{}, err
		}
		if gate.Reject != nil {
			return tool.Answer{Action: "decline"}, nil
		}
		if _, res, ok := form.Decode(gate.Args); !ok {
			what = fmt.Sprintf("%s asks again (the last answer did not fit: %s): %s", c.Name, res.Text, q.Message)
			fields = gate.Args
			continue
		}
		// Plain JSON values (Decode keeps numbers as json.Number, which
		// a peer's schema check would take for strings).
		var content map[string]any
		if err := json.Unmarshal(gate.Args, &content); err != nil {
			return tool.Answer{Action: "decline"}, nil
		}
		return tool.Answer{Action: "accept", Content: content}, nil
	}
	return tool.Answer{Action: "decline"}, nil
}

// maxAsks bounds how often one question is put again after answers that
// do not fit it.
const maxAsks = 3

// defaults are a form's fields at their default values: a property's
// default, else its first enum value, else its type's zero.
func defaults(schema json.RawMessage) map[string]any {
	var s struct {
		Properties map[string]struct {
			Type    string `json:"type"`
			Default any    `json:"default"`
			Enum    []any  `json:"enum"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	out := map[string]any{}
	for name, p := range s.Properties {
		switch {
		case p.Default != nil:
			out[name] = p.Default
		case len(p.Enum) > 0:
			out[name] = p.Enum[0]
		case p.Type == "boolean":
			out[name] = false
		case p.Type == "integer", p.Type == "number":
			out[name] = 0
		case p.Type == "array":
			out[name] = []any{}
		default:
			out[name] = ""
		}
	}
	return out
}

// sample answers a call's request for a completion (an MCP server's
// sampling) with the generator's own model, once a person approved it as
// a call for approval (pending under the call's id and /sampleN, its
// messages as the arguments; mode auto approves, deny refuses) and while
// the run's and the agent's token budgets allow: its tokens are booked
// and reported as the generator's requests are. Nothing of it enters the
// transcript: the server gets the text.
//
// P9: a server's completion is the run's model's, approved and counted.
func (g *generator) sample(ctx context.Context, c model.ToolCall, id string, req *model.Request) (*model.Response, error) {
	if g.appr == nil {
		return nil, errors.New("this run does not let servers use its model")
	}
	args, err := json.Marshal(struct {
		System   string          `json:"system,omitempty"`
		Messages []model.Message `json:"messages"`
	}{req.Context, req.Messages})
	if err != nil {
		return nil, err
	}
	gate, err := g.appr.Check(ctx, runrecord.PendingCall{Call: id, Tool: c.Name + " asks the run's model", Args: args, Task: g.caller.TaskID, Agent: g.caller.Agent},
		approval.Tool{Own: spec.ApproveAlways})
	if err != nil {
		return nil, err
	}
	if gate.Reject != nil {
		return nil, errors.New(gate.Reject.Text)
	}
	req.Caller = g.caller
	held, err := g.reserve(ctx, req)
	if err != nil {
		return nil, err
	}
	defer held.release()
	resp, fig, err := g.generate(ctx, req)
	g.emitRequest(req, fig)
	return resp, err
}
