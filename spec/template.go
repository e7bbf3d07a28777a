package spec

import (
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/internal/tmpl"
)

// toolFuncs and scriptFuncs name the functions (besides tmpl's built-in
// ones) that tool templates (package tool: json) and scripted-model
// arguments (package scripted: handle) may call. Validation only parses,
// so the bodies are stubs; the names must match, or a template that
// validates would fail to compile at run time.
var (
	toolFuncs   = map[string]tmpl.Func{"json": stubFunc}
	scriptFuncs = map[string]tmpl.Func{"handle": stubFunc}
)

func stubFunc(...any) (any, error) { return "", nil }

// templateLine finds text/template's "NAME:LINE:" in a parse error.
var templateLine = regexp.MustCompile(`^template: [^:]*:(\d+):(?:\d+:)? ?(.*)$`)

// checkTemplate parses text as a Go template and reports a syntax error at
// its line inside the YAML value (a block scalar's lines follow its key).
func checkTemplate(d *decoder, n *yaml.Node, what, text string, funcs map[string]tmpl.Func) {
	if _, err := tmpl.Parse(what, text, funcs); err != nil {
		msg := err.Error()
		at := d.pos(n)
		if m := templateLine.FindStringSubmatch(msg); m != nil {
			msg = m[2]
			if line, _ := strconv.Atoi(m[1]); line > 1 {
				at.Line += line - 1
				if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
					at.Line++ // the text starts on the line after | or >
				}
				at.Col = 1
			}
		}
		x := d.errorf(n, "template", "%s: template syntax: %s", what, msg)
		x.Pos, x.Hint = at, "templates are Go text/template: each {{ needs its }}, each if, range and with its {{end}}"
	}
}
