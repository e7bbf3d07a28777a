package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/model"
)

const script = `
host:
  - call: read_skill
    args: {id: weekly-report}
  - calls:
      - {call: artifact_md, args: {get: section, handle: '{{handle "weekly-report"}}', heading: Steps}}
      - {call: addTask, args: {goal: 'Summarize {{.Input}}', deps: [a, b]}}
  - say: 'done: {{.Last}}'
agents:
  summarizer:
    - say: 'Brief for {{.Task.Goal}}'
tasks:
  gather:
    - say: rows collected
`

func TestScriptedReplaysPerCaller(t *testing.T) {
	s, err := Parse("t.script.yaml", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	m := New(s, func(id string) (string, error) { return "h_" + id, nil })
	ctx := context.Background()
	tests := []struct {
		name  string
		req   model.Request
		want  string
		calls []string
	}{
		{"host step 1", model.Request{Caller: model.Caller{Step: 0}}, "", []string{`read_skill {"id":"weekly-report"}`}},
		{"host step 2", model.Request{Caller: model.Caller{Step: 1, Input: "sales"}}, "", []string{
			`artifact_md {"get":"section","handle":"h_weekly-report","heading":"Steps"}`,
			`addTask {"deps":["a","b"],"goal":"Summarize sales"}`,
		}},
		{"host step 3 sees last result", model.Request{Caller: model.Caller{Step: 2},
			Messages: []model.Message{{Role: model.Tool, Text: "ok!"}}}, "done: ok!", nil},
		{"agent by name", model.Request{Caller: model.Caller{Agent: "weekly-report/summarizer", TaskID: "t1", TaskGoal: "the week"}}, "Brief for the week", nil},
		{"task override", model.Request{Caller: model.Caller{Agent: "summarizer", TaskID: "gather"}}, "rows collected", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := m.Generate(ctx, &tt.req)
			if err != nil {
				t.Fatal(err)
			}
			var calls []string
			for _, c := range resp.Calls {
				calls = append(calls, c.Name+" "+string(c.Args))
			}
			if resp.Text != tt.want {
				t.Errorf("text = %q, want %q", resp.Text, tt.want)
			}
			if d := cmp.Diff(tt.calls, calls); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
		})
	}
}

// The error names the list in the script (where to add steps), not the
// caller: the engine's layers name the task or the host.
func TestScriptedExhaustedNamesTheList(t *testing.T) {
	s, _ := Parse("t.script.yaml", []byte(script))
	m := New(s, nil)
	_, err := m.Generate(context.Background(), &model.Request{Caller: model.Caller{Agent: "summarizer", TaskID: "t9", Step: 1}})
	if !errors.Is(err, ErrExhausted) {
		t.Fatalf("err = %v, want ErrExhausted", err)
	}
	for _, want := range []string{"agents.summarizer in t.script.yaml", "has 1 step;", "step 2 was asked for"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	_, err = m.Generate(context.Background(), &model.Request{Caller: model.Caller{Agent: "nobody", TaskID: "t1"}})
	if err == nil || !strings.HasSuffix(err.Error(), "add them under agents.nobody or tasks.t1") {
		t.Errorf("unknown agent: err = %v", err)
	}
}

func TestParseRejectsBadSteps(t *testing.T) {
	for name, src := range map[string]string{
		"empty step":    "host:\n  - {}\n",
		"call+calls":    "host:\n  - call: a\n    calls: [{call: b}]\n",
		"unknown key":   "host:\n  - sya: hi\n",
		"calls no name": "host:\n  - calls: [{args: {}}]\n",
	} {
		if _, err := Parse("x.script.yaml", []byte(src)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// .Deps reaches a dependency's typed result by field, and a text result
// as its text.
func TestScriptedDeps(t *testing.T) {
	s, err := Parse("t.script.yaml", []byte(`agents:
  reporter:
    - say: "{{.Deps.collect.total}} items, first {{index .Deps.collect.items 0}}; notes: {{.Deps.notes}}"
`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := New(s, nil).Generate(context.Background(), &model.Request{Caller: model.Caller{Agent: "reporter", TaskID: "report",
		Deps: map[string]json.RawMessage{"collect": json.RawMessage(`{"total":3,"items":["a"]}`), "notes": json.RawMessage(`"all fine"`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "3 items, first a; notes: all fine" {
		t.Errorf("say = %q", resp.Text)
	}
}

// A template that only prints text and the data's string fields is
// rendered from them without the template's map of values, to the same
// text Execute makes; any other template goes through Execute.
func TestPlainTemplatesRenderAsExecute(t *testing.T) {
	m := New(&Script{}, nil)
	var d tmplData
	d.Input, d.Last = "fan <out> & in", "last \u2028 result"
	d.Task.ID, d.Task.Goal = "t7", "task {{7}}"
	for _, tc := range []struct {
		text  string
		plain bool
	}{
		{"done {{.Task.ID}}", true},
		{"{{.Input}} / {{.Last}} / {{.Task.Goal}}{{.Task.ID}}", true},
		{"{{- .Input -}}  x  {{- .Task.ID}}", true},
		{"{{.Task}}", false},
		{"{{.Deps}}", false},
		{"{{.Input | printf \"%q\"}}", false},
		{"{{if .Input}}y{{end}}", false},
		{"{{/* note */}}{{.Input}}", true}, // the parser drops comments
		{"{{$x := .Input}}{{$x}}", false},
		{"{{.}}", false},
	} {
		p, err := m.template(tc.text)
		if err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		got, ok := p.fill(&d)
		if ok != tc.plain {
			t.Errorf("%s: plain %v, want %v", tc.text, ok, tc.plain)
		}
		want, err := p.Execute(d.values(true))
		if err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		if ok && got != want {
			t.Errorf("%s: filled %q, Execute %q", tc.text, got, want)
		}
		if r, err := m.render(tc.text, d); err != nil || r != want {
			t.Errorf("%s: render %q, %v; want %q", tc.text, r, err, want)
		}
	}
}
