package tmpl

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/template/parse"
)

var (
	errBreak    = errors.New("break")
	errContinue = errors.New("continue")
)

type variable struct {
	name  string
	value any
}

// state is one execution: the output, the variable stack.
type state struct {
	t    *Template
	out  *strings.Builder
	vars []variable
}

// errorf wraps err with the position of node, once: an error that already
// has a position keeps the innermost one.
func (s *state) errorf(node parse.Node, err error) error {
	var ee *ExecError
	if errors.As(err, &ee) || errors.Is(err, errBreak) || errors.Is(err, errContinue) {
		return err
	}
	loc, ctx := s.t.tree.ErrorContext(node)
	return &ExecError{Where: fmt.Sprintf("%s: executing at <%s>", loc, ctx), Err: err}
}

func (s *state) walk(dot any, node parse.Node) error {
	switch n := node.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := s.walk(dot, c); err != nil {
				return err
			}
		}
	case *parse.TextNode:
		s.out.Write(n.Text)
	case *parse.CommentNode:
	case *parse.ActionNode:
		v, err := s.pipe(dot, n.Pipe)
		if err != nil {
			return err
		}
		if len(n.Pipe.Decl) == 0 {
			s.out.WriteString(printable(v))
		}
	case *parse.IfNode:
		return s.ifOrWith(dot, n.Pipe, n.List, n.ElseList, false)
	case *parse.WithNode:
		return s.ifOrWith(dot, n.Pipe, n.List, n.ElseList, true)
	case *parse.RangeNode:
		return s.rangeNode(dot, n)
	case *parse.BreakNode:
		return errBreak
	case *parse.ContinueNode:
		return errContinue
	default:
		return s.errorf(node, fmt.Errorf("unsupported action %s", node))
	}
	return nil
}

func (s *state) ifOrWith(dot any, p *parse.PipeNode, list, elseList *parse.ListNode, with bool) error {
	mark := len(s.vars)
	defer func() { s.vars = s.vars[:mark] }()
	v, err := s.pipe(dot, p)
	if err != nil {
		return err
	}
	if truth(v) {
		if with {
			dot = v
		}
		return s.walk(dot, list)
	}
	if elseList != nil {
		return s.walk(dot, elseList)
	}
	return nil
}

func (s *state) rangeNode(dot any, r *parse.RangeNode) error {
	mark := len(s.vars)
	defer func() { s.vars = s.vars[:mark] }()
	v, err := s.pipe(dot, r.Pipe)
	if err != nil {
		return err
	}
	// The pipe's own declaration was pushed with the whole value; the
	// iteration variables replace it.
	s.vars = s.vars[:mark]
	one := func(key, elem any) error {
		m := len(s.vars)
		defer func() { s.vars = s.vars[:m] }()
		switch len(r.Pipe.Decl) {
		case 1:
			s.vars = append(s.vars, variable{r.Pipe.Decl[0].Ident[0], elem})
		case 2:
			s.vars = append(s.vars, variable{r.Pipe.Decl[0].Ident[0], key}, variable{r.Pipe.Decl[1].Ident[0], elem})
		}
		err := s.walk(elem, r.List)
		if errors.Is(err, errContinue) {
			return nil
		}
		return err
	}
	n := 0
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			n++
			if err := one(i, e); err != nil {
				return stopOnBreak(err)
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			n++
			if err := one(k, x[k]); err != nil {
				return stopOnBreak(err)
			}
		}
	case nil:
	default:
		count, ok := toInt(v)
		if !ok {
			return s.errorf(r, fmt.Errorf("range can't iterate over %s", describe(v)))
		}
		for i := 0; i < count; i++ {
			n++
			if err := one(i, i); err != nil {
				return stopOnBreak(err)
			}
		}
	}
	if n == 0 && r.ElseList != nil {
		return s.walk(dot, r.ElseList)
	}
	return nil
}

func stopOnBreak(err error) error {
	if errors.Is(err, errBreak) {
		return nil
	}
	return err
}

// pipe evaluates a pipeline, each command's result the last argument of
// the next, and binds its declared variables.
func (s *state) pipe(dot any, p *parse.PipeNode) (any, error) {
	if p == nil {
		return nil, nil
	}
	var v any
	for i, c := range p.Cmds {
		var err error
		v, err = s.command(dot, c, v, i > 0)
		if err != nil {
			return nil, err
		}
	}
	for _, d := range p.Decl {
		if p.IsAssign {
			if err := s.set(d.Ident[0], v); err != nil {
				return nil, s.errorf(d, err)
			}
		} else {
			s.vars = append(s.vars, variable{d.Ident[0], v})
		}
	}
	return v, nil
}

func (s *state) set(name string, v any) error {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == name {
			s.vars[i].value = v
			return nil
		}
	}
	return fmt.Errorf("undefined variable: %s", name)
}

func (s *state) lookup(name string) (any, error) {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == name {
			return s.vars[i].value, nil
		}
	}
	return nil, fmt.Errorf("undefined variable: %s", name)
}

func (s *state) command(dot any, c *parse.CommandNode, final any, piped bool) (any, error) {
	first := c.Args[0]
	if id, ok := first.(*parse.IdentifierNode); ok {
		return s.call(dot, c, id.Ident, final, piped)
	}
	if len(c.Args) > 1 || piped {
		return nil, s.errorf(c, fmt.Errorf("can't give argument to non-function %s", first))
	}
	return s.arg(dot, first)
}

// call runs a function. and and or evaluate their arguments only as far as
// they need to, as text/template does.
func (s *state) call(dot any, c *parse.CommandNode, name string, final any, piped bool) (any, error) {
	args := c.Args[1:]
	switch name {
	case "and", "or":
		n := len(args)
		if piped {
			n++
		}
		if n == 0 {
			return nil, s.errorf(c, fmt.Errorf("%s: wrong number of args: want at least 1, got 0", name))
		}
		var v any
		for i := 0; i < n; i++ {
			if i < len(args) {
				var err error
				if v, err = s.arg(dot, args[i]); err != nil {
					return nil, err
				}
			} else {
				v = final
			}
			if truth(v) == (name == "or") {
				return v, nil
			}
		}
		return v, nil
	}
	f := s.t.funcs[name]
	if f == nil {
		return nil, s.errorf(c, fmt.Errorf("function %q not defined", name))
	}
	vals := make([]any, 0, len(args)+1)
	for _, a := range args {
		v, err := s.arg(dot, a)
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
	if piped {
		vals = append(vals, final)
	}
	v, err := f(vals...)
	if err != nil {
		return nil, s.errorf(c, fmt.Errorf("error calling %s: %w", name, err))
	}
	return v, nil
}

// arg evaluates one operand.
func (s *state) arg(dot any, n parse.Node) (any, error) {
	switch n := n.(type) {
	case *parse.DotNode:
		return dot, nil
	case *parse.NilNode:
		return nil, nil
	case *parse.BoolNode:
		return n.True, nil
	case *parse.StringNode:
		return n.Text, nil
	case *parse.NumberNode:
		// As text/template: a literal written as a float stays a float
		// even when integral (2.0, 1e3).
		hex := strings.HasPrefix(n.Text, "0x") || strings.HasPrefix(n.Text, "0X")
		switch {
		case n.IsFloat && !hex && n.Text[0] != '\'' && strings.ContainsAny(n.Text, ".eEpP"):
			return n.Float64, nil
		case n.IsInt:
			return int(n.Int64), nil
		case n.IsFloat:
			return n.Float64, nil
		}
		return nil, s.errorf(n, fmt.Errorf("number %s is not supported", n.Text))
	case *parse.FieldNode:
		return s.fields(n, dot, n.Ident)
	case *parse.VariableNode:
		v, err := s.lookup(n.Ident[0])
		if err != nil {
			return nil, s.errorf(n, err)
		}
		return s.fields(n, v, n.Ident[1:])
	case *parse.ChainNode:
		v, err := s.arg(dot, n.Node)
		if err != nil {
			return nil, err
		}
		return s.fields(n, v, n.Field)
	case *parse.PipeNode:
		mark := len(s.vars)
		defer func() { s.vars = s.vars[:mark] }()
		return s.pipe(dot, n)
	case *parse.IdentifierNode:
		// A function used as an operand without arguments.
		return s.call(dot, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos, Args: []parse.Node{n}}, n.Ident, nil, false)
	}
	return nil, s.errorf(n, fmt.Errorf("can't evaluate %s", n))
}

// fields walks .a.b.c from v. Only maps have fields: a template never
// reaches a method.
func (s *state) fields(node parse.Node, v any, names []string) (any, error) {
	for _, name := range names {
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[name]
			if !ok {
				return nil, s.errorf(node, &MissingKeyError{Key: name})
			}
			v = e
		case nil:
			return nil, s.errorf(node, fmt.Errorf("nil has no field %s", name))
		default:
			return nil, s.errorf(node, fmt.Errorf("can't evaluate field %s in %s", name, describe(v)))
		}
	}
	return v, nil
}

// printable is how a value prints: as fmt prints it, nil as text/template
// prints a missing value.
func printable(v any) string {
	switch x := v.(type) {
	case nil:
		return "<no value>"
	case string:
		return x
	case json.Number:
		return string(x)
	}
	return fmt.Sprint(v)
}

// truth is text/template's notion of a non-empty value; a number counts
// by its value, whether a Go number or a JSON one.
func truth(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	if f, ok := toFloat(v); ok {
		return f != 0
	}
	return true
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	if _, ok := toFloat(v); ok {
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
