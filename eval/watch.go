package eval

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/fsdrun/fsd/model"
)

// stopText is the final answer a trigger case's run ends with once it
// has seen what it watches: the actions the model chose are not run.
const stopText = "(fsd eval: the trigger case has seen the reads it watches; the run stops here without running the next action)"

// call is one tool call a model answered, by any generator of the run.
type call struct {
	name string
	args json.RawMessage
	host bool
}

// watch sits around a run's model and keeps every tool call it answers.
// For a trigger case it also ends the host early: after steps host
// steps, or (steps 0) at the first answer that is not only read_skill
// calls, it answers stopText instead, so the run ends as a normal run
// without the chosen action's effects (V1).
type watch struct {
	inner   model.Model
	trigger bool
	steps   int

	mu    sync.Mutex
	calls []call
	reads []string // the watched reads of a trigger case
	host  int      // host steps so far
	done  bool
}

// Capabilities and CapabilitiesFor pass the inner model's on: watching
// changes nothing a request may carry.
func (w *watch) Capabilities() model.Capabilities { return model.CapabilitiesOf(w.inner) }

func (w *watch) CapabilitiesFor(c model.Caller) model.Capabilities {
	return model.CapabilitiesFor(w.inner, c)
}

func (w *watch) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	host := req.Caller.Agent == "" && req.Caller.TaskID == ""
	if w.trigger && host {
		w.mu.Lock()
		stop := w.done || (w.steps > 0 && w.host >= w.steps)
		w.mu.Unlock()
		if stop {
			return &model.Response{Text: stopText}, nil
		}
	}
	resp, err := w.inner.Generate(ctx, req)
	if err != nil || resp == nil {
		return resp, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	acting := false
	for _, c := range resp.Calls {
		w.calls = append(w.calls, call{name: c.Name, args: c.Args, host: host})
		if c.Name != "read_skill" {
			acting = true
		} else if w.trigger && host {
			w.reads = append(w.reads, readID(c.Args))
		}
	}
	if !w.trigger || !host {
		return resp, nil
	}
	w.host++
	if w.steps == 0 && acting {
		w.done = true
		out := *resp
		out.Text, out.Calls = stopText, nil
		return &out, nil
	}
	return resp, nil
}

// observed returns the calls and the trigger reads seen so far.
func (w *watch) observed() ([]call, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]call(nil), w.calls...), append([]string(nil), w.reads...)
}

func readID(args json.RawMessage) string {
	var a struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(args, &a)
	return a.ID
}

// reads are the skills a run's read_skill calls named, in order.
func reads(calls []call) []string {
	var out []string
	for _, c := range calls {
		if c.name == "read_skill" {
			out = append(out, readID(c.args))
		}
	}
	return out
}
