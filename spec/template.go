package spec

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/internal/lazyre"
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
var templateLine = lazyre.New(`^template: [^:]*:(\d+):(?:\d+:)? ?(.*)$`)

// checkTemplate parses text as a Go template and reports a syntax error at
// its line inside the YAML value (a block scalar's lines follow its key).
func checkTemplate(d *decoder, n *yaml.Node, what, text string, funcs map[string]tmpl.Func) {
	if _, err := tmpl.Parse(what, text, funcs); err != nil {
		msg := err.Error()
		at := d.pos(n)
		if m := templateLine().FindStringSubmatch(msg); m != nil {
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

// checkTaskTemplate checks a static task's goal or input template: its
// syntax, and that it reads only .Input and the results of the task's
// own dependencies (.Deps.ID…), so a typo fails validation rather than the
// run.
func checkTaskTemplate(d *decoder, n *yaml.Node, what string, deps []string) {
	text, ok := str(n)
	if !ok || !strings.Contains(text, "{{") {
		return
	}
	before := len(d.diags)
	checkTemplate(d, n, what, text, toolFuncs)
	if len(d.diags) > before {
		return
	}
	t, err := tmpl.Parse(what, text, toolFuncs)
	if err != nil {
		return
	}
	for _, f := range t.Fields() {
		switch {
		case f[0] == "Input":
		case f[0] != "Deps":
			d.errorf(n, "template", "%s reads .%s; a task template has .Input (the run's input) and .Deps (its dependencies' results)", what, strings.Join(f, ".")).Hint = "write {{.Deps.TASK}} or {{.Deps.TASK.field}} for a dependency's result"
		case len(f) > 1 && !contains(deps, f[1]):
			d.errorf(n, "template", "%s reads .Deps.%s, but the task does not depend on %q", what, f[1], f[1]).Hint = depHint(f[1], deps)
		}
	}
}

func depHint(id string, deps []string) string {
	if s := didYouMean(id, deps); s != "" {
		return s
	}
	return fmt.Sprintf("add %s to the task's deps", id)
}
