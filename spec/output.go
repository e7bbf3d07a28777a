package spec

import (
	"fmt"
	"path/filepath"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/output"
	"github.com/fsdrun/fsd/schemas"
)

// DefaultOutputRepairs is how many repair turns an agent with an output
// schema gets when its final answer does not match: the model reads the
// violations and answers again. After that the task fails.
const DefaultOutputRepairs = 2

// Repairs is the agent's bound on output repair turns: output-repairs, or
// DefaultOutputRepairs when unset.
func (a Agent) Repairs() int {
	if a.OutputRepairs != nil {
		return max(*a.OutputRepairs, 0)
	}
	return DefaultOutputRepairs
}

// decodeOutput reads an agent's `output:`: a JSON Schema written inline
// as a YAML mapping, or the path of a JSON (or YAML) file holding one,
// relative to and inside the skill's folder. The schema is compiled here,
// so a broken one is reported at its place: the key inside the manifest,
// or the line and column in the schema file.
func decodeOutput(d *decoder, n *yaml.Node, s *Skill, a *Agent) {
	file, root := d.file, n
	if rel, ok := str(n); ok {
		full, problem := inside(s.Dir, rel)
		if problem != "" {
			d.errorf(n, "path", "output: %s", problem)
			return
		}
		data, diags := readFile(full)
		if diags == nil {
			root, diags = parseYAML(full, data)
		}
		if diags != nil {
			// Point at the schema file's own problem: its line and column.
			d.diags = append(d.diags, diags...)
			return
		}
		a.OutputFile, file = filepath.ToSlash(rel), full
		s.schemaFiles = append(s.schemaFiles, data)
	}
	if root.Kind != yaml.MappingNode {
		if file == d.file {
			return // the skill schema reports it
		}
		d.diags = append(d.diags, diag.Errorf(diag.Pos{File: file, Line: root.Line, Col: root.Column}, "output", "an output schema is a JSON Schema object"))
		return
	}
	v, err := schemas.Value(root)
	if err != nil {
		d.diags = append(d.diags, schemas.ErrorAt(err, file))
		return
	}
	m, _ := v.(map[string]any)
	if !schemaFits(d, file, root, fmt.Sprintf("agent %q's output schema", a.Name), m) {
		return
	}
	if _, err := output.Compile(a.Name, m); err != nil {
		at := root
		msg := err.Error()
		if ce, ok := err.(*output.CompileError); ok {
			at, msg = nodeAt(root, ce.Path), ce.Msg
		}
		d.diags = append(d.diags, diag.Diagnostic{Pos: diag.Pos{File: file, Line: at.Line, Col: at.Column}, Kind: "output",
			Message: fmt.Sprintf("agent %q: output schema: %s", a.Name, msg),
			Hint:    "output is a JSON Schema (draft 2020-12) of the agent's final answer"})
		return
	}
	a.Output = m
}

// nodeAt follows path (mapping keys, sequence indices) from n as far as
// it goes and returns the node it reaches.
func nodeAt(n *yaml.Node, path []string) *yaml.Node {
	at := n
	for _, p := range path {
		n = deref(n)
		if n == nil {
			break
		}
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := deref(n.Content[i]); k != nil && k.Value == p {
					next = n.Content[i+1]
				}
			}
		case yaml.SequenceNode:
			var i int
			if _, err := fmt.Sscanf(p, "%d", &i); err == nil && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
			}
		}
		if next == nil {
			break
		}
		at, n = deref(next), next
	}
	return at
}
