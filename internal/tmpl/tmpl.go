package tmpl

import (
	"errors"
	"fmt"
	"strings"
	"text/template/parse"
)

// Func is a template function. Its arguments are the evaluated operands,
// the piped value last.
type Func func(args ...any) (any, error)

// Template is a parsed template. It is immutable and safe for concurrent
// Execute calls.
type Template struct {
	name  string
	tree  *parse.Tree
	funcs map[string]Func
}

// MissingKeyError is a field looked up in a map that does not have it.
type MissingKeyError struct{ Key string }

func (e *MissingKeyError) Error() string { return fmt.Sprintf("map has no entry for key %q", e.Key) }

// ExecError is a failure while rendering; Where is "name:line:col".
type ExecError struct {
	Where string
	Err   error
}

func (e *ExecError) Error() string { return "template: " + e.Where + ": " + e.Err.Error() }
func (e *ExecError) Unwrap() error { return e.Err }

// Parse parses text. funcs are the caller's functions, added to the
// built-in ones (and shadowing them).
func Parse(name, text string, funcs map[string]Func) (*Template, error) {
	all := make(map[string]Func, len(builtins)+len(funcs))
	for k, f := range builtins {
		all[k] = f
	}
	for k, f := range funcs {
		all[k] = f
	}
	known := make(map[string]any, len(all))
	for k := range all {
		known[k] = struct{}{}
	}
	trees, err := parse.Parse(name, text, "", "", known)
	if err != nil {
		return nil, err
	}
	t := &Template{name: name, tree: trees[name], funcs: all}
	if len(trees) > 1 {
		return nil, fmt.Errorf("template: %s: define and block are not supported", name)
	}
	if t.tree == nil || t.tree.Root == nil {
		// Only possible for text that defines nothing at all.
		t.tree = &parse.Tree{Name: name, Root: &parse.ListNode{}}
		return t, nil
	}
	if n := findTemplateNode(t.tree.Root); n != nil {
		loc, _ := t.tree.ErrorContext(n)
		return nil, fmt.Errorf("template: %s: {{template}} is not supported", loc)
	}
	return t, nil
}

// findTemplateNode returns the first {{template}} action under n.
func findTemplateNode(n parse.Node) parse.Node {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if f := findTemplateNode(c); f != nil {
				return f
			}
		}
	case *parse.TemplateNode:
		return n
	case *parse.IfNode:
		return firstNonNil(findTemplateNode(n.List), findTemplateNode(n.ElseList))
	case *parse.WithNode:
		return firstNonNil(findTemplateNode(n.List), findTemplateNode(n.ElseList))
	case *parse.RangeNode:
		return firstNonNil(findTemplateNode(n.List), findTemplateNode(n.ElseList))
	}
	return nil
}

func firstNonNil(a, b parse.Node) parse.Node {
	if a != nil {
		return a
	}
	return b
}

// Name is the name given to Parse.
func (t *Template) Name() string { return t.name }

// Execute renders the template over data: a map[string]any (JSON object),
// or any other JSON-shaped value.
func (t *Template) Execute(data any) (string, error) {
	s := &state{t: t, vars: []variable{{"$", data}}}
	var b strings.Builder
	s.out = &b
	if err := s.walk(data, t.tree.Root); err != nil {
		if errors.Is(err, errBreak) || errors.Is(err, errContinue) {
			err = errors.New("break or continue outside range")
		}
		return "", err
	}
	return b.String(), nil
}

// Piece is a part of a plain template (Plain): Text printed as it is, or
// when Field is set, the value of that field chain of the data.
type Piece struct {
	Text  string
	Field []string
}

// Plain returns the pieces of a template made only of text and actions
// that print a field chain of the data ({{.Task.ID}}: no pipeline,
// function, variable, comment or control), which a caller that knows its
// data's fields can print without Execute's map of them: a field whose
// value is a string prints as that string. ok is false for any other
// template.
func (t *Template) Plain() (pieces []Piece, ok bool) {
	for _, n := range t.tree.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			pieces = append(pieces, Piece{Text: string(n.Text)})
		case *parse.ActionNode:
			p := n.Pipe
			if p == nil || len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
				return nil, false
			}
			f, isField := p.Cmds[0].Args[0].(*parse.FieldNode)
			if !isField {
				return nil, false
			}
			pieces = append(pieces, Piece{Field: f.Ident})
		default:
			return nil, false
		}
	}
	return pieces, true
}

// Fields lists the field chains the template reads from its data, as
// written: {{.Deps.collect.total}} gives [Deps collect total]. Chains on
// variables other than $ and inside with/range bodies (where dot moves)
// are left out; validation uses the list to check references early.
func (t *Template) Fields() [][]string {
	var out [][]string
	var walk func(n parse.Node, top bool)
	walk = func(n parse.Node, top bool) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, c := range n.Nodes {
				walk(c, top)
			}
		case *parse.ActionNode:
			walk(n.Pipe, top)
		case *parse.PipeNode:
			if n == nil {
				return
			}
			for _, c := range n.Cmds {
				walk(c, top)
			}
		case *parse.CommandNode:
			for _, a := range n.Args {
				walk(a, top)
			}
		case *parse.FieldNode:
			if top {
				out = append(out, append([]string(nil), n.Ident...))
			}
		case *parse.VariableNode:
			if len(n.Ident) > 1 && n.Ident[0] == "$" {
				out = append(out, append([]string(nil), n.Ident[1:]...))
			}
		case *parse.ChainNode:
			walk(n.Node, top)
		case *parse.IfNode:
			walk(n.Pipe, top)
			walk(n.List, top)
			walk(n.ElseList, top)
		case *parse.WithNode:
			walk(n.Pipe, top)
			walk(n.List, false)
			walk(n.ElseList, top)
		case *parse.RangeNode:
			walk(n.Pipe, top)
			walk(n.List, false)
			walk(n.ElseList, top)
		}
	}
	walk(t.tree.Root, true)
	return out
}
