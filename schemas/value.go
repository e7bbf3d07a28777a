package schemas

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"
)

// Bounds on what a document may reach through aliases when it is turned
// into a value. Aliases are pointers in the parsed tree, so a few lines
// can name billions of nodes (the "billion laughs" alias bomb), or a
// large text many times over (a 1 MiB string aliased a thousand times is
// a small file and a gigabyte of schema). Past either bound Value stops
// at once with an error at the alias.
const (
	// MaxAliasNodes bounds the nodes reached through aliases.
	MaxAliasNodes = 100_000
	// MaxAliasBytes bounds the text (scalar values and keys) reached
	// through aliases: as much again as the largest manifest (4 MiB, the
	// spec package's MaxFileSize), so a loaded document holds at most
	// twice what a file can say. Anchors that share a schema fragment or
	// a prompt stay far below it; what is built from a value (a tool's
	// schema in every request, a skill's receipt, token counts) costs a
	// small multiple of its text, so the worst a manifest costs stays in
	// megabytes.
	MaxAliasBytes = 4 << 20
)

// ValueError is a problem turning YAML into a JSON value, at Node.
type ValueError struct {
	Node *yaml.Node
	Msg  string
	Hint string // how to fix it, or ""
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("%d:%d: %s", e.Node.Line, e.Node.Column, e.Msg)
}

// Value turns a YAML node into the JSON value a schema validates:
// map[string]any, []any, string, int64, float64, bool or nil. Aliases are
// followed within MaxAliasNodes and MaxAliasBytes; scalars are typed by
// their resolved YAML tag, so `on: yes` stays a string and `8` is an
// integer.
func Value(n *yaml.Node) (any, error) {
	c := converter{}
	return c.value(n, false)
}

type converter struct {
	expanded int // nodes visited through an alias
	bytes    int // scalar bytes visited through an alias
}

// grow counts n, reached through an alias, against the bounds.
func (c *converter) grow(n *yaml.Node) error {
	c.expanded++
	if c.expanded > MaxAliasNodes {
		return &ValueError{Node: n, Msg: fmt.Sprintf("aliases expand to more than %d nodes; an alias bomb?", MaxAliasNodes)}
	}
	if n.Kind == yaml.ScalarNode {
		c.bytes += len(n.Value)
	} else if n.Kind == yaml.MappingNode {
		for i := 0; i < len(n.Content); i += 2 {
			c.bytes += len(n.Content[i].Value)
		}
	}
	if c.bytes > MaxAliasBytes {
		return &ValueError{Node: n, Msg: fmt.Sprintf("aliases repeat more than %d bytes (%d MiB) of text; a large value aliased many times?", MaxAliasBytes, MaxAliasBytes>>20),
			Hint: "anchor only small values, or write a large one out where it is used"}
	}
	return nil
}

func (c *converter) value(n *yaml.Node, viaAlias bool) (any, error) {
	if n == nil {
		return nil, nil
	}
	if viaAlias {
		if err := c.grow(n); err != nil {
			return nil, err
		}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0], viaAlias)
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, &ValueError{Node: n, Msg: "alias to an unknown anchor"}
		}
		v, err := c.value(n.Alias, true)
		if ve, ok := err.(*ValueError); ok && !viaAlias {
			// Point at the alias the user wrote, not deep inside the anchor.
			return nil, &ValueError{Node: n, Msg: ve.Msg, Hint: ve.Hint}
		}
		return v, err
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				return nil, &ValueError{Node: k, Msg: "a mapping key must be a plain string"}
			}
			val, err := c.value(v, viaAlias)
			if err != nil {
				return nil, err
			}
			m[k.Value] = val
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			val, err := c.value(e, viaAlias)
			if err != nil {
				return nil, err
			}
			s = append(s, val)
		}
		return s, nil
	case yaml.ScalarNode:
		return scalar(n), nil
	}
	return nil, &ValueError{Node: n, Msg: "unsupported YAML node"}
}

// scalar types a scalar by its resolved tag. Anything unusual (custom
// tags, timestamps, binary) stays the string the user wrote.
func scalar(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		switch strings.ToLower(n.Value) {
		case "true":
			return true
		case "false":
			return false
		}
	case "!!int":
		s := strings.ReplaceAll(n.Value, "_", "")
		if strings.HasPrefix(s, "0o") || strings.HasPrefix(s, "-0o") || strings.HasPrefix(s, "+0o") {
			s = strings.Replace(s, "0o", "0", 1)
		}
		if i, err := strconv.ParseInt(s, 0, 64); err == nil {
			return i
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
	case "!!float":
		if f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f
		}
	}
	return n.Value
}
