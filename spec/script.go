package spec

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/schemas"
)

var (
	scriptKeys = []string{"host", "turns", "agents", "tasks"}
	stepKeys   = []string{"say", "call", "args", "calls", "fail", "sleep"}
	callKeys   = []string{"call", "args"}
)

// ValidateScript checks a scripted model's *.script.yaml as `fsd validate`
// does the other files: the script schema (`fsd schema script`), unknown
// keys with a suggestion, step shapes, sleep durations and the argument
// templates, each at its file:line:col. The scripted model loads what
// passes.
func ValidateScript(path string) diag.List {
	data, diags := readFile(path)
	if diags != nil {
		return diags
	}
	return validateScript(path, data)
}

func validateScript(path string, data []byte) diag.List {
	if !hasContent(data) {
		return nil // an empty script is an empty script: every list is empty
	}
	root, diags := parseYAML(path, data)
	if diags != nil {
		return diags
	}
	return finish(schemas.KindScript, root, path, func(d *decoder) {
		d.unknown = diag.Error
		var n Node
		for _, f := range d.fields(root, scriptKeys, &n) {
			if f.key == "host" {
				checkSteps(d, f.v, "host")
				continue
			}
			if f.key == "turns" {
				if seq := deref(f.v); seq != nil && seq.Kind == yaml.SequenceNode {
					for i, t := range seq.Content {
						checkSteps(d, t, fmt.Sprintf("turn %d", i+1))
					}
				}
				continue
			}
			var names Node
			for _, p := range d.pairs(f.v, &names) {
				checkSteps(d, p.v, fmt.Sprintf("%s %s", map[string]string{"agents": "agent", "tasks": "task"}[f.key], p.key))
			}
		}
	})
}

func checkSteps(d *decoder, n *yaml.Node, who string) {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return
	}
	for i, e := range n.Content {
		var node Node
		has := map[string]bool{}
		for _, f := range d.fields(e, stepKeys, &node) {
			has[f.key] = true
			switch f.key {
			case "sleep":
				if s, ok := str(f.v); ok {
					if dur, err := time.ParseDuration(s); err != nil || dur < 0 {
						d.errorf(f.v, "value", "sleep %q is not a duration such as 300ms", s)
					}
				}
			case "args":
				checkArgTemplates(d, f.v)
			case "calls":
				if seq := deref(f.v); seq != nil && seq.Kind == yaml.SequenceNode {
					for _, c := range seq.Content {
						var cn Node
						for _, cf := range d.fields(c, callKeys, &cn) {
							if cf.key == "args" {
								checkArgTemplates(d, cf.v)
							}
						}
					}
				}
			}
		}
		e = deref(e)
		if e == nil || e.Kind != yaml.MappingNode {
			continue
		}
		step := fmt.Sprintf("%s step %d", who, i+1)
		switch {
		case has["call"] && has["calls"]:
			d.errorf(e, "value", "%s: use either call or calls, not both", step)
		case has["fail"] && (has["say"] || has["call"] || has["calls"]):
			d.errorf(e, "value", "%s: fail cannot be combined with say, call or calls", step)
		case !has["say"] && !has["call"] && !has["calls"] && !has["fail"]:
			d.errorf(e, "value", "%s: a step needs say, call, calls or fail", step)
		case has["args"] && !has["call"]:
			d.errorf(e, "value", "%s: args belongs to call", step)
		}
	}
}

// checkArgTemplates parses every string inside a call's arguments as the
// scripted model will.
func checkArgTemplates(d *decoder, n *yaml.Node) {
	n = deref(n)
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if s, ok := str(n); ok {
			checkTemplate(d, n, "argument", s, scriptFuncs)
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			checkArgTemplates(d, n.Content[i])
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			checkArgTemplates(d, c)
		}
	}
}
