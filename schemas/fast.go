package schemas

import (
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v4"
)

// accepts reports whether document node n is valid under s, walking the
// YAML tree itself for the keywords a manifest's bulk uses (type,
// properties, required, additionalProperties, items, minLength and
// maxLength, minItems and maxItems, enum of strings, $ref) and handing
// any other schema, with the value under it, to the validator. It never
// rejects: false means "not shown valid here", and Validate then runs the
// validator over the whole document, which finds and places every error.
//
// A large workflow is mostly tasks of a few strings each: the validator
// builds a value for each node and tracks scopes and evaluated keys for
// each, about 30 allocations a task; this walk makes none for them.
//
// F5: a document accepts passes the validator; every document it does
// not accept is judged by the validator alone.
func accepts(s *jsonschema.Schema, n *yaml.Node) bool {
	if n == nil || s == nil {
		return false
	}
	if s.Bool != nil {
		return *s.Bool && plain(n)
	}
	if !walkable(s) {
		return delegate(s, n)
	}
	if s.Ref != nil && !accepts(s.Ref, n) {
		return false
	}
	// Each keyword applies to values of its type only; type says which
	// types are allowed.
	switch n.Kind {
	case yaml.MappingNode:
		return allows(s, objectMask) && acceptsMapping(s, n)
	case yaml.SequenceNode:
		return allows(s, arrayMask) && acceptsSequence(s, n)
	case yaml.ScalarNode:
		if n.ShortTag() != "!!str" {
			return delegate(s, n) // numbers, booleans, null: the converter's types
		}
		return allows(s, stringMask) && acceptsString(s, n.Value)
	}
	return false // an alias: the converter bounds what it expands to
}

func allows(s *jsonschema.Schema, t jsonschema.Types) bool {
	return s.Types == nil || *s.Types&t != 0
}

func acceptsMapping(s *jsonschema.Schema, n *yaml.Node) bool {
	if s.Enum != nil {
		return false // walkable: an enum of strings only
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return false
		}
		if ps, ok := s.Properties[k.Value]; ok {
			if !accepts(ps, v) {
				return false
			}
			continue
		}
		switch a := s.AdditionalProperties.(type) {
		case nil:
			if !plain(v) {
				return false
			}
		case bool:
			if !a || !plain(v) {
				return false
			}
		case *jsonschema.Schema:
			if !accepts(a, v) {
				return false
			}
		default:
			return false
		}
	}
	for _, r := range s.Required {
		if !hasKey(n, r) {
			return false
		}
	}
	return true
}

func acceptsSequence(s *jsonschema.Schema, n *yaml.Node) bool {
	if s.Enum != nil {
		return false
	}
	if s.MinItems != nil && len(n.Content) < *s.MinItems || s.MaxItems != nil && len(n.Content) > *s.MaxItems {
		return false
	}
	for _, e := range n.Content {
		if s.Items2020 != nil && !accepts(s.Items2020, e) || s.Items2020 == nil && !plain(e) {
			return false
		}
	}
	return true
}

func acceptsString(s *jsonschema.Schema, v string) bool {
	if s.MinLength != nil || s.MaxLength != nil {
		l := utf8.RuneCountInString(v)
		if s.MinLength != nil && l < *s.MinLength || s.MaxLength != nil && l > *s.MaxLength {
			return false
		}
	}
	if s.Enum != nil {
		for _, e := range s.Enum.Values {
			if x, ok := e.(string); ok && x == v {
				return true
			}
		}
		return false
	}
	return true
}

// walkable reports whether s uses only keywords accepts checks itself
// (and annotations, which assert nothing).
func walkable(s *jsonschema.Schema) bool {
	return s.RecursiveRef == nil && s.DynamicRef == nil && s.Const == nil && s.Not == nil &&
		s.AllOf == nil && s.AnyOf == nil && s.OneOf == nil && s.If == nil && s.Then == nil && s.Else == nil &&
		s.Format == nil && s.MaxProperties == nil && s.MinProperties == nil && s.PropertyNames == nil &&
		s.PatternProperties == nil && s.Dependencies == nil && s.DependentRequired == nil && s.DependentSchemas == nil &&
		s.UnevaluatedProperties == nil && !s.UniqueItems && s.Contains == nil && s.MinContains == nil && s.MaxContains == nil &&
		s.Items == nil && s.AdditionalItems == nil && s.PrefixItems == nil && s.UnevaluatedItems == nil &&
		s.Pattern == nil && s.ContentEncoding == nil && s.ContentMediaType == nil && s.ContentSchema == nil &&
		s.Maximum == nil && s.Minimum == nil && s.ExclusiveMaximum == nil && s.ExclusiveMinimum == nil && s.MultipleOf == nil &&
		s.Extensions == nil && (s.Enum == nil || s.Types != nil && *s.Types == stringMask)
}

// delegate validates the value under n against s with the validator. A
// subschema's verdict on its value does not depend on where it sits: the
// schemas use no $dynamicRef or $recursiveRef (TestNoDynamicRefs), the
// only keywords whose meaning depends on the path taken to a value.
func delegate(s *jsonschema.Schema, n *yaml.Node) bool {
	if !plain(n) {
		return false
	}
	v, err := Value(n)
	return err == nil && s.Validate(v) == nil
}

// plain reports whether the tree under n is one Value converts without
// following an alias: the converter bounds what aliases expand to over
// the whole document, so a document with one is left to it.
func plain(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.ScalarNode:
		return true
	case yaml.MappingNode:
		for i, c := range n.Content {
			if i%2 == 0 && c.Kind != yaml.ScalarNode || !plain(c) {
				return false
			}
		}
		return len(n.Content)%2 == 0
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if !plain(c) {
				return false
			}
		}
		return true
	}
	return false
}

func hasKey(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
			return true
		}
	}
	return false
}

func typeMask(t string) jsonschema.Types {
	var m jsonschema.Types
	m.Add(t)
	return m
}

var objectMask, arrayMask, stringMask = typeMask("object"), typeMask("array"), typeMask("string")
