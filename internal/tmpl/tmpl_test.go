package tmpl

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"text/template"
)

func data() map[string]any {
	var d map[string]any
	_ = json.Unmarshal([]byte(`{"name":"Ada","channel":"north","n":3,"zero":0,"f":2.5,"empty":"","null":null,
		"list":["a","b","c"],"obj":{"k":"v","inner":{"deep":true}},"objs":[{"id":"x"},{"id":"y"}]}`), &d)
	return d
}

var jsonFunc = map[string]Func{"json": func(a ...any) (any, error) {
	b, err := json.Marshal(a[len(a)-1])
	return string(b), err
}}

// TestAgainstTextTemplate renders each template with this package and with
// text/template over the same data: the output must be the same.
func TestAgainstTextTemplate(t *testing.T) {
	tests := []string{
		"Hello, {{.name}}!",
		"plain text",
		"",
		`{{if eq .channel "online"}}+31%{{else if eq .channel "north"}}+12%{{else}}+1%{{end}}`,
		`{{if .empty}}yes{{else}}no{{end}} {{if .list}}L{{end}} {{if .null}}N{{end}} {{if not .empty}}E{{end}}`,
		`{{range .list}}[{{.}}]{{end}}`,
		`{{range $i, $e := .list}}{{$i}}={{$e}};{{end}}`,
		`{{range $e := .list}}{{if eq $e "b"}}{{continue}}{{end}}{{$e}}{{end}}`,
		`{{range .list}}{{if eq . "b"}}{{break}}{{end}}{{.}}{{end}}`,
		`{{range $k, $v := .obj}}{{$k}};{{end}}`,
		`{{range .nothing_here_is_missing_key_test | len}}{{end}}`,
		`{{range .objs}}{{.id}}{{end}}{{range .obj.nothing}}x{{else}}none{{end}}`,
		`{{with .obj}}{{.k}}{{.inner.deep}}{{end}}{{with .empty}}x{{else}}w-else{{end}}`,
		`{{.obj.inner.deep}} {{$.name}} {{$x := .name}}{{$x}} {{$x = "B"}}{{$x}}`,
		`{{len .list}} {{len .name}} {{index .list 1}} {{index .obj "k"}} {{index .objs 1 | len}}`,
		`{{printf "%s-%v-%.1f" .name .n .f}} {{print .name 1 2}} {{println .name}}`,
		`{{and .name .n}} {{and .empty .n}} {{or .empty .name}} {{or .empty .zero}}`,
		`{{lt .f 3.0}} {{gt .name "Ab"}} {{le .n .n}} {{ne .name "x"}} {{eq .name "x" "Ada"}}`,
		`{{- .name -}}   {{/* a comment */}}  x`,
		`{{(.obj).k}} {{(index .objs 0).id}}`,
		`{{.null}}`,
		`{{urlquery .name "a b&c"}}`,
		`{{range 3}}{{.}}{{end}}`,
	}
	for _, text := range tests {
		t.Run(text, func(t *testing.T) {
			want, werr := runStd(text, data())
			got, gerr := runOurs(text, data())
			if (werr != nil) != (gerr != nil) {
				t.Fatalf("text/template err %v, ours %v", werr, gerr)
			}
			if werr == nil && got != want {
				t.Errorf("got %q, text/template %q", got, want)
			}
		})
	}
}

func runStd(text string, d any) (string, error) {
	tm, err := template.New("t").Option("missingkey=error").Parse(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = tm.Execute(&b, d)
	return b.String(), err
}

func runOurs(text string, d any) (string, error) {
	tm, err := Parse("t", text, jsonFunc)
	if err != nil {
		return "", err
	}
	return tm.Execute(d)
}

func TestJSONFuncAndNumbers(t *testing.T) {
	// Tool arguments come decoded with json.Number numbers.
	d := map[string]any{"n": json.Number("3"), "z": json.Number("0"), "v": map[string]any{"a": []any{json.Number("1"), "x"}}}
	tm, err := Parse("t", `{{json .v}} {{.n}} {{if .z}}z{{else}}no-z{{end}} {{eq .n 3}} {{printf "%d" .n}} {{.v | json}}`, jsonFunc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tm.Execute(d)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":[1,"x"]} 3 no-z true 3 {"a":[1,"x"]}`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name, text string
		parse      bool   // fails at Parse
		want       string // in the error
	}{
		{"unclosed action", "Hello {{.name", true, "template: t:1: unclosed action"},
		{"syntax error names its line", "line one\nline two {{if}}", true, "template: t:2: missing value for if"},
		{"unknown function", `{{shout .name}}`, true, `function "shout" not defined`},
		{"define refused", `{{define "x"}}y{{end}}`, true, "define and block are not supported"},
		{"template refused", `a {{template "x"}}`, true, "t:1:13: {{template}} is not supported"},
		{"missing key", "Hi {{.who}}", false, `template: t:1:5: executing at <.who>: map has no entry for key "who"`},
		{"field of a string", "{{.name.first}}", false, "can't evaluate field first in a string"},
		{"index out of range", "{{index .list 9}}", false, "index out of range: 9"},
		{"argument to a field", "{{.name 1}}", false, "can't give argument to non-function .name"},
		{"bad comparison", `{{lt .name 1}}`, false, "incompatible types for comparison"},
		{"undefined variable", `{{$y}}`, true, "undefined variable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm, err := Parse("t", tt.text, jsonFunc)
			if tt.parse {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("parse err = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = tm.Execute(data())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	tm, _ := Parse("t", "{{.who}}", nil)
	_, err := tm.Execute(data())
	var mk *MissingKeyError
	if !errors.As(err, &mk) || mk.Key != "who" {
		t.Errorf("err = %v, want a MissingKeyError for who", err)
	}
}

// FuzzTemplate checks that no template text panics the parser or the
// evaluator, and that where text/template renders JSON data without error,
// this package renders the same.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"Hello, {{.name}}!", `{{range $i, $e := .list}}{{$i}}{{$e}}{{end}}`,
		`{{if eq .channel "north"}}a{{else}}b{{end}}`, `{{with .obj}}{{.k}}{{end}}`, `{{printf "%v" .f}}`,
		`{{$x := 1}}{{$x = 2}}{{$x}}`, `{{len .list | print}}`, `{{index .objs 0 "id"}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, gerr := runOurs(text, data())
		if strings.Contains(text, "json") || strings.Contains(text, "slice") || strings.Contains(text, "call") ||
			strings.Contains(text, "html") || strings.Contains(text, "js") || strings.Contains(text, "range") {
			return // functions only one side has; range over int needs Go semantics both sides
		}
		want, werr := runStd(text, data())
		if werr == nil && gerr == nil && got != want {
			t.Errorf("%q: got %q, text/template %q", text, got, want)
		}
	})
}
