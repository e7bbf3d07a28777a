package spec

import (
	"bytes"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/diag"
)

// A workflow of thousands of tasks is mostly lines like
//
//	  - {id: t0, assignee: fan/worker, goal: task 0}
//
// for which the YAML parser makes a node, a read buffer, a boxed value
// and a string per scalar: about thirty allocations a line. parseWorkflow
// builds the nodes of such lines itself, from one string and a few large
// slabs, and leaves the parser the rest of the file with those lines
// blanked. It only ever does what the parser would: a line it is not
// sure of is the parser's, and when the tree around the lines is not
// the one it expects, or the file has any error, the parser reads the
// whole file as before.

// parseWorkflow is parseYAML of a workflow, with the one-line flow
// mappings right after its top-level `tasks:` line built directly
// (taskLines). The tree is the parser's, node for node.
//
// F7: the tree is what the parser makes of the whole file, or the file
// goes to the parser whole.
func parseWorkflow(file string, data []byte) (*yaml.Node, diag.List) {
	tl := scanTaskLines(data)
	if tl == nil || checkText(file, data) != nil {
		return parseYAML(file, data)
	}
	root, diags := parseYAML(file, tl.blanked)
	if diags != nil || !tl.graft(root) {
		return parseYAML(file, data)
	}
	return root, nil
}

// taskLines are the task lines scanTaskLines found: their nodes, and the
// file with their lines blanked.
type taskLines struct {
	blanked []byte
	// line is the `tasks:` line's number; the items start on the next.
	line   int
	indent int // of the items' "-"
	items  []*yaml.Node
}

// The words a plain scalar resolves to a bool or null by (YAML 1.2's
// core schema, as go.yaml.in/yaml/v4 resolves them); any other word that
// starts with a letter is a string.
var notStrings = map[string]bool{
	"true": true, "True": true, "TRUE": true, "false": true, "False": true, "FALSE": true,
	"null": true, "Null": true, "NULL": true,
}

// scanTaskLines finds the top-level `tasks:` line (exactly that) and the
// lines right after it that are each a sequence item holding a one-line
// flow mapping of plain words: keys of letters, digits, "_" and "-";
// values of those and "/", "." and inner spaces, starting with a letter
// and not a bool or null; no key twice. It stops at the first other
// line. nil when there are none, when a "#" follows the `tasks:` line
// (the parser keeps comments on the nodes near them), or when the file
// has a carriage return (the parser counts a lone one as a line break)
// or a byte order mark.
func scanTaskLines(data []byte) *taskLines {
	if bytes.IndexByte(data, '\r') >= 0 || bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return nil
	}
	at, line := -1, 1
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			break
		}
		if string(data[off:off+end]) == "tasks:" {
			at = off + end + 1
			break
		}
		off += end + 1
		line++
	}
	if at < 0 || bytes.IndexByte(data[at:], '#') >= 0 {
		// A comment after the lines may be the parser's foot comment of
		// the last of them.
		return nil
	}
	tl := &taskLines{line: line, indent: -1}
	src := "" // the file as one string, made once the first line is taken
	var slab []yaml.Node
	var kids []*yaml.Node
	first := at
	for off, n := at, line+1; off < len(data); n++ {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data) - off
		}
		l := data[off : off+end]
		indent, pairs, ok := flowItem(l)
		if !ok || (tl.indent >= 0 && indent != tl.indent) {
			break
		}
		if src == "" {
			src = string(data)
		}
		tl.indent = indent
		need := 1 + 2*len(pairs)
		if len(slab) < need {
			slab = make([]yaml.Node, max(need, 256))
		}
		if len(kids) < need-1 {
			kids = make([]*yaml.Node, max(need-1, 512))
		}
		m := &slab[0]
		*m = yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Tag: "!!map", Line: n, Column: indent + 3}
		m.Content = kids[: need-1 : need-1]
		for i, p := range pairs {
			k, v := &slab[1+2*i], &slab[2+2*i]
			*k = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: src[off+p.k0 : off+p.k1], Line: n, Column: p.k0 + 1}
			*v = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: src[off+p.v0 : off+p.v1], Line: n, Column: p.v0 + 1}
			m.Content[2*i], m.Content[2*i+1] = k, v
		}
		slab, kids = slab[need:], kids[need-1:]
		tl.items = append(tl.items, m)
		off += end + 1
		if off > len(data) {
			off = len(data)
		}
		at = off
	}
	if len(tl.items) == 0 {
		return nil
	}
	// The parser reads the file with the lines taken as spaces: a blank
	// line changes nothing around it, and every other byte keeps its
	// place, so every other node keeps its line and column.
	tl.blanked = bytes.Clone(data)
	for i := first; i < at; i++ {
		if tl.blanked[i] != '\n' {
			tl.blanked[i] = ' '
		}
	}
	return tl
}

// pair is one key and value of a flow item, as byte offsets in its line.
type pair struct{ k0, k1, v0, v1 int }

// flowItem reads a line `<indent>- {key: value, …}` as scanTaskLines
// takes it: the indent and the pairs (at most eight), or false.
func flowItem(l []byte) (indent int, pairs []pair, ok bool) {
	var buf [8]pair
	pairs = buf[:0]
	i := 0
	for i < len(l) && l[i] == ' ' {
		i++
	}
	indent = i
	if !bytes.HasPrefix(l[i:], []byte("- {")) {
		return 0, nil, false
	}
	i += 3
	for {
		for i < len(l) && l[i] == ' ' {
			i++
		}
		var p pair
		p.k0 = i
		for i < len(l) && wordByte(l[i]) {
			i++
		}
		p.k1 = i
		if p.k1 == p.k0 || !letter(l[p.k0]) || i+1 >= len(l) || l[i] != ':' || l[i+1] != ' ' {
			return 0, nil, false
		}
		i += 2
		for i < len(l) && l[i] == ' ' {
			i++
		}
		p.v0 = i
		for i < len(l) && (wordByte(l[i]) || l[i] == '/' || l[i] == '.' || l[i] == ' ') {
			i++
		}
		p.v1 = i
		for p.v1 > p.v0 && l[p.v1-1] == ' ' {
			p.v1--
		}
		if p.v1 == p.v0 || !letter(l[p.v0]) || i >= len(l) {
			return 0, nil, false
		}
		k, v := string(l[p.k0:p.k1]), string(l[p.v0:p.v1])
		if notStrings[k] || notStrings[v] || len(pairs) == len(buf) {
			return 0, nil, false
		}
		for _, q := range pairs {
			if string(l[q.k0:q.k1]) == k {
				return 0, nil, false
			}
		}
		pairs = append(pairs, p)
		switch l[i] {
		case ',':
			i++
			continue
		case '}':
			i++
			for i < len(l) && l[i] == ' ' {
				i++
			}
			if i != len(l) {
				return 0, nil, false
			}
			return indent, pairs, true
		}
		return 0, nil, false
	}
}

func letter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func wordByte(c byte) bool { return letter(c) || c >= '0' && c <= '9' || c == '_' || c == '-' }

// graft puts the items into the tree the parser made of the blanked
// file, as the first items of the `tasks:` sequence; false when that
// tree is not one the items fit into as the parser would have put them:
// `tasks` a key of the root mapping on its line, its value empty (the
// items were all of it) or a block sequence at the items' indent that
// starts after them.
func (tl *taskLines) graft(root *yaml.Node) bool {
	if root == nil || root.Kind != yaml.MappingNode || root.Style != 0 {
		return false
	}
	first := tl.line + 1
	last := first + len(tl.items) - 1
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Line != tl.line {
			continue
		}
		if k.Kind != yaml.ScalarNode || k.Value != "tasks" || k.Column != 1 || k.Style != 0 {
			return false
		}
		switch {
		case v.Kind == yaml.ScalarNode && v.Tag == "!!null" && v.Value == "" && v.Style == 0 && v.Anchor == "":
			root.Content[i+1] = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: first, Column: tl.indent + 1, Content: tl.items}
			return true
		case v.Kind == yaml.SequenceNode && v.Style == 0 && v.Anchor == "" && v.Tag == "!!seq" && v.Column == tl.indent+1 && v.Line > last:
			v.Content = append(tl.items, v.Content...)
			v.Line = first
			return true
		}
		return false
	}
	return false
}
