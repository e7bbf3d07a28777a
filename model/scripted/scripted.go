package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fsdrun/fsd/internal/tmpl"
	"github.com/fsdrun/fsd/model"
)

// ErrExhausted is returned when a generator asks for more steps than its
// list holds.
var ErrExhausted = errors.New("script exhausted")

// HandleFunc resolves a skill id to the handle of its spooled artifact.
type HandleFunc func(skillID string) (string, error)

// Model replays a Script. It is safe for concurrent use.
type Model struct {
	script *Script
	handle HandleFunc
	// parsed caches each argument template by its text: a fan-out plays
	// the same step thousands of times.
	parsed sync.Map // string -> *tmpl.Template
}

// New returns a model replaying s; handle serves the `handle` template
// function (nil: every handle lookup fails).
func New(s *Script, handle HandleFunc) *Model {
	if s == nil {
		s = &Script{}
	}
	return &Model{script: s, handle: handle}
}

// steps picks the list for the caller: a task override, else the agent's
// list (by bare name or skill/agent), else the host's. key is where the
// list is in the script (host, agents.NAME, tasks.ID); when there is none,
// it is where to add one.
func (m *Model) steps(c model.Caller) (steps []Step, key string, ok bool) {
	if c.TaskID != "" {
		if st, ok := m.script.Tasks[c.TaskID]; ok {
			return st, "tasks." + c.TaskID, true
		}
	}
	if c.Agent == "" && c.Turn > 0 && len(m.script.Turns) > 0 {
		// A session's turn plays its own list, so a later turn does not
		// depend on how many steps the ones before took.
		key = fmt.Sprintf("turns[%d]", c.Turn-1)
		if c.Turn > len(m.script.Turns) {
			return nil, key, false
		}
		return m.script.Turns[c.Turn-1], key, true
	}
	if c.Agent == "" {
		return m.script.Host, "host", true
	}
	if st, ok := m.script.Agents[c.Agent]; ok {
		return st, "agents." + c.Agent, true
	}
	short := c.Agent
	if i := strings.LastIndexByte(c.Agent, '/'); i >= 0 {
		short = c.Agent[i+1:]
		if st, ok := m.script.Agents[short]; ok {
			return st, "agents." + short, true
		}
	}
	key = "agents." + short
	if c.TaskID != "" {
		key += " or tasks." + c.TaskID
	}
	return nil, key, false
}

// Generate plays the caller's step. Its errors name the script and the
// list in it, not the caller: the engine's layers name the task or host.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	steps, key, ok := m.steps(req.Caller)
	if !ok {
		what := "this agent"
		if req.Caller.Agent == "" {
			what = fmt.Sprintf("turn %d of the session", req.Caller.Turn)
		}
		return nil, fmt.Errorf("scripted model: %s has no steps for %s; add them under %s", m.script.File, what, key)
	}
	if req.Caller.Step >= len(steps) {
		n := fmt.Sprintf("%d steps", len(steps))
		if len(steps) == 1 {
			n = "1 step"
		}
		return nil, fmt.Errorf("scripted model: %s in %s has %s; step %d was asked for: %w",
			key, m.script.File, n, req.Caller.Step+1, ErrExhausted)
	}
	// Named only in errors: a step that plays builds no string for it.
	where := func() string { return fmt.Sprintf("step %d of %s in %s", req.Caller.Step+1, key, m.script.File) }
	st := steps[req.Caller.Step]
	if st.Sleep != "" {
		d, _ := time.ParseDuration(st.Sleep) // checked by Parse
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	if st.Fail != "" {
		return nil, fmt.Errorf("scripted model: %s: %s", where(), st.Fail)
	}
	data := m.data(req)
	resp := &model.Response{}
	var err error
	if resp.Text, err = m.render(st.Say, data); err != nil {
		return nil, fmt.Errorf("scripted model: %s: say: %w", where(), err)
	}
	calls := st.Calls
	if st.Call != "" {
		calls = []Call{{Call: st.Call, Args: st.Args}}
	}
	for i, c := range calls {
		args, err := m.renderArgs(c.Args, data)
		if err != nil {
			return nil, fmt.Errorf("scripted model: %s: %s args: %w", where(), c.Call, err)
		}
		resp.Calls = append(resp.Calls, model.ToolCall{
			ID:   fmt.Sprintf("call_%s_%d_%d", callerKey(req.Caller), req.Caller.Step+1, i+1),
			Name: c.Call,
			Args: args,
		})
	}
	// No usage: nothing is billed. The engine counts the request and the
	// answer with the o200k tokenizer instead and marks the figures as an
	// estimate, so offline runs show the tokens a provider would see.
	return resp, nil
}

func callerKey(c model.Caller) string {
	switch {
	case c.TaskID != "":
		return c.TaskID
	case c.Agent != "":
		return c.Agent
	}
	return "host"
}

// tmplData is what argument templates see.
type tmplData struct {
	Input string
	Task  struct{ ID, Goal string }
	Last  string
	// deps are the task's dependencies' results by task id, as JSON: a
	// typed result's value, a text result's text. Templates see them
	// decoded as .Deps.
	deps map[string]json.RawMessage
}

// noDeps is .Deps for a template that does not name them; templates
// only read it.
var noDeps = map[string]any{}

// values is the data as the template sees it: plain maps, no methods.
// Deps are decoded only for a template that names them: a join of
// thousands of tasks would decode them all for every step otherwise.
func (d tmplData) values(withDeps bool) map[string]any {
	deps := noDeps
	if withDeps {
		deps = make(map[string]any, len(d.deps))
		for id, raw := range d.deps {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			var v any
			if dec.Decode(&v) == nil {
				deps[id] = v
			}
		}
	}
	return map[string]any{
		"Input": d.Input,
		"Task":  map[string]any{"ID": d.Task.ID, "Goal": d.Task.Goal},
		"Last":  d.Last,
		"Deps":  deps,
	}
}

func (m *Model) data(req *model.Request) tmplData {
	d := tmplData{Input: req.Caller.Input, deps: req.Caller.Deps}
	d.Task.ID, d.Task.Goal = req.Caller.TaskID, req.Caller.TaskGoal
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == model.Tool {
			d.Last = req.Messages[i].Text
			break
		}
	}
	if d.Input == "" {
		for _, msg := range req.Messages {
			if msg.Role == model.User {
				d.Input = msg.Text
			}
		}
	}
	return d
}

func (m *Model) render(s string, data tmplData) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	t, err := m.template(s)
	if err != nil {
		return "", err
	}
	if out, ok := t.fill(&data); ok {
		return out, nil
	}
	return t.Execute(data.values(strings.Contains(s, "Deps")))
}

// parsed is an argument template and, when it only prints text and the
// data's string fields, its pieces.
type parsed struct {
	*tmpl.Template
	// plain are its pieces: text, or (field set) a field chain joined
	// with dots.
	plain []struct{ text, field string }
	ok    bool
}

// fill prints a plain template from d's fields, as Execute prints them
// from values (strings as they are), without building values: a fan-out
// of thousands of tasks renders `done {{.Task.ID}}` once each. ok is false
// for any other template, or a field that is not one of d's strings.
//
// F9: a plain template's text is what Execute prints.
func (p *parsed) fill(d *tmplData) (string, bool) {
	if !p.ok {
		return "", false
	}
	var b strings.Builder
	for _, pc := range p.plain {
		if pc.field == "" {
			b.WriteString(pc.text)
			continue
		}
		switch pc.field {
		case "Input":
			b.WriteString(d.Input)
		case "Last":
			b.WriteString(d.Last)
		case "Task.ID":
			b.WriteString(d.Task.ID)
		case "Task.Goal":
			b.WriteString(d.Task.Goal)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// template parses an argument template once.
func (m *Model) template(s string) (*parsed, error) {
	if t, ok := m.parsed.Load(s); ok {
		return t.(*parsed), nil
	}
	t, err := tmpl.Parse("arg", s, map[string]tmpl.Func{
		"handle": func(a ...any) (any, error) {
			if len(a) != 1 {
				return nil, fmt.Errorf("handle takes one skill id, got %d arguments", len(a))
			}
			id, ok := a[0].(string)
			if !ok {
				return nil, fmt.Errorf("handle takes a skill id string, got %v", a[0])
			}
			if m.handle == nil {
				return nil, fmt.Errorf("no handle for %q", id)
			}
			return m.handle(id)
		},
	})
	if err != nil {
		return nil, err
	}
	p := &parsed{Template: t}
	var pieces []tmpl.Piece
	if pieces, p.ok = t.Plain(); p.ok {
		for _, pc := range pieces {
			p.plain = append(p.plain, struct{ text, field string }{pc.Text, strings.Join(pc.Field, ".")})
		}
	}
	m.parsed.Store(s, p)
	return p, nil
}

// renderArgs renders every string inside args and encodes them as JSON.
func (m *Model) renderArgs(args map[string]any, data tmplData) (json.RawMessage, error) {
	if args == nil {
		return json.RawMessage(`{}`), nil
	}
	v, err := m.walk(args, data)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func (m *Model) walk(v any, data tmplData) (any, error) {
	switch x := v.(type) {
	case string:
		return m.render(x, data)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := m.walk(e, data)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := m.walk(e, data)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}
