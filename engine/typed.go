package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/internal/jsonw"
	"github.com/fsdrun/fsd/internal/tmpl"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/output"
	"github.com/fsdrun/fsd/spec"
)

// ErrOutput is returned when an agent with an output schema still answers
// something that does not match it after its repair turns: its task fails
// with the violations.
var ErrOutput = errors.New("final answer does not match the agent's output schema")

// typedOutput is a worker's output contract: the compiled schema, what
// requests carry of it, and the repair turns left.
type typedOutput struct {
	schema  *output.Schema
	req     *model.Output
	repairs int // the bound
	used    int
}

// newTypedOutput compiles an agent's output schema (nil: a text answer).
// The schema was checked when the skill loaded; an error here means the
// skill changed under the run.
func newTypedOutput(a spec.Agent) (*typedOutput, error) {
	if a.Output == nil {
		return nil, nil
	}
	s, err := output.Compile(a.Name, a.Output)
	if err != nil {
		return nil, fmt.Errorf("agent %s: output schema: %w", a.Name, err)
	}
	return &typedOutput{schema: s, req: &model.Output{Name: a.Name, Schema: s.JSON()}, repairs: a.Repairs()}, nil
}

// prompt is what the worker's context block says about the answer, for
// every provider: those without structured output learn the schema here.
func (o *typedOutput) prompt() string {
	return "\n\nYour final answer is data for the tasks that depend on yours: answer with one JSON value " +
		"valid against this JSON Schema and nothing else — no prose around it.\n<output-schema>\n" +
		string(o.schema.JSON()) + "\n</output-schema>\n"
}

// judge checks a final answer. It returns the answer's JSON (compact)
// when it matches; else the repair message for the model while repair
// turns are left, or an ErrOutput error listing the violations.
func (o *typedOutput) judge(answer string) (value json.RawMessage, repair string, err error) {
	v, problems := o.schema.Check(answer)
	if problems == nil {
		return v, "", nil
	}
	list := "- " + strings.Join(problems, "\n- ")
	if o.used >= o.repairs {
		return nil, "", fmt.Errorf("%w (after %d repair turns):\n%s", ErrOutput, o.used, list)
	}
	o.used++
	return nil, fmt.Sprintf("Your answer does not match the output schema:\n%s\n\n"+
		"Answer again with only a JSON value valid against the schema (repair turn %d of %d).", list, o.used, o.repairs), nil
}

// depsJSON are a task's dependencies' results as JSON by task id: a typed
// result as its value, a text result as a JSON string.
func depsJSON(deps []board.DepResult) map[string]json.RawMessage {
	if len(deps) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(deps))
	// The text results are encoded into one buffer, as json.Marshal
	// would encode each (a join of thousands of tasks would otherwise
	// allocate twice for each).
	n := 0
	for _, d := range deps {
		n += len(d.Result) + 2
	}
	buf := make([]byte, 0, n)
	for _, d := range deps {
		if len(d.Output) > 0 {
			out[d.TaskID] = d.Output
			continue
		}
		start := len(buf)
		buf = jsonw.String(buf, d.Result)
		out[d.TaskID] = buf[start:len(buf):len(buf)]
	}
	return out
}

// depValues are the dependencies as templates see them: .Deps.ID is a
// typed result's JSON value (fields reachable as .Deps.ID.field) or a
// text result's text.
func depValues(deps []board.DepResult) map[string]any {
	out := make(map[string]any, len(deps))
	for _, d := range deps {
		out[d.TaskID] = d.Result
		if len(d.Output) > 0 {
			if v, err := decodeJSON(d.Output); err == nil {
				out[d.TaskID] = v
			}
		}
	}
	return out
}

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// taskFuncs are the functions a static task's goal and input templates
// may call besides tmpl's own: json renders a value as compact JSON.
var taskFuncs = map[string]tmpl.Func{"json": func(a ...any) (any, error) {
	if len(a) != 1 {
		return nil, fmt.Errorf("json takes one value, got %d", len(a))
	}
	b, err := json.Marshal(a[0])
	return string(b), err
}}

// renderTaskText renders a static task's goal or input: a template over
// .Input (the run's input) and .Deps (see depValues). Text without {{ is
// taken as it is.
func renderTaskText(what, text, input string, deps []board.DepResult) (string, error) {
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	t, err := tmpl.Parse(what, text, taskFuncs)
	if err != nil {
		return "", err
	}
	return t.Execute(map[string]any{"Input": input, "Deps": depValues(deps)})
}

// renderStatic renders a workflow task's goal and input templates on the
// task a worker runs (the board keeps them as written). Tasks a generator
// added are taken as they are: a model's text is not a template.
func (hb *hostBoard) renderStatic(t *board.Task, deps []board.DepResult) error {
	if !hb.static[t.ID] {
		return nil
	}
	input := ""
	for _, m := range hb.parent() {
		if m.Role == model.User {
			input = m.Text
			break
		}
	}
	var err error
	if t.Goal, err = renderTaskText("goal", t.Goal, input, deps); err != nil {
		return err
	}
	t.Input, err = renderTaskText("input", t.Input, input, deps)
	return err
}
