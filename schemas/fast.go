package schemas

import (
	"encoding/json"
	"fmt"
	"math/big"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"
)

// accepts reports whether document node n is valid under r, walking the
// YAML tree itself with the keywords rules knows, and handing a schema
// with any other keyword, with the value under it, to the validator. It
// never rejects: false means "not shown valid here", and Validate then
// runs the validator over the whole document, which finds and places
// every error.
//
// A large workflow is mostly tasks of a few strings each: the validator
// builds a value for each node and tracks scopes and evaluated keys for
// each, about 30 allocations a task; this walk makes none for them.
//
// F5: a document accepts passes the validator; every document it does
// not accept is judged by the validator alone.
func accepts(r *rule, n *yaml.Node) bool {
	return n != nil && r != nil && r.check(n) == yes
}

// verdict is the walk's judgement of a value under a schema. yes and no
// are the validator's verdict exactly; maybe leaves it to the validator.
// A subschema's no decides branches (if, oneOf, not), so a no must be as
// sure as a yes (TestAcceptsOnlyWhatValidates, FuzzVerdicts). yes also means the tree under the
// value is plain.
type verdict uint8

const (
	maybe verdict = iota
	yes
	no
)

// check judges n under r. Each keyword is one more condition: the first
// that is not met decides.
func (r *rule) check(n *yaml.Node) verdict {
	r.built()
	if r.boolean != nil {
		if !*r.boolean {
			return no
		}
		return plainVerdict(n)
	}
	if r.delegate {
		return r.delegated(n)
	}
	t, str, v, ok := typeOf(n)
	if !ok {
		return maybe // an alias: the converter bounds what it expands to
	}
	if r.types != 0 && r.types&t == 0 && !(r.types&tInteger != 0 && t == tNumber && isInteger(v)) {
		return no
	}
	if r.enum != nil {
		if vd := r.inEnum(t, str, v); vd != yes {
			return vd
		}
	}
	if vd := r.applicators(n); vd != yes {
		return vd
	}
	switch t {
	case tObject:
		return r.checkMapping(n)
	case tArray:
		return r.checkSequence(n)
	case tString:
		return r.checkString(str)
	case tNumber:
		return r.checkNumber(v)
	}
	return yes
}

// applicators judges n under r's $ref, allOf, anyOf, oneOf, not and
// if/then/else.
func (r *rule) applicators(n *yaml.Node) verdict {
	if r.ref != nil {
		if vd := r.ref.check(n); vd != yes {
			return vd
		}
	}
	for _, s := range r.allOf {
		if vd := s.check(n); vd != yes {
			return vd
		}
	}
	if r.anyOf != nil {
		out := no
		for _, s := range r.anyOf {
			switch s.check(n) {
			case yes:
				out = yes
			case maybe:
				if out == no {
					out = maybe
				}
			}
			if out == yes {
				break
			}
		}
		if out != yes {
			return out
		}
	}
	if r.oneOf != nil {
		matched := 0
		for _, s := range r.oneOf {
			switch s.check(n) {
			case yes:
				matched++
			case maybe:
				return maybe
			}
		}
		if matched != 1 {
			return no
		}
	}
	if r.not != nil {
		switch r.not.check(n) {
		case yes:
			return no
		case maybe:
			return maybe
		}
	}
	if r.ifR != nil {
		branch := r.elseR
		switch r.ifR.check(n) {
		case yes:
			branch = r.thenR
		case maybe:
			return maybe
		}
		if branch != nil {
			if vd := branch.check(n); vd != yes {
				return vd
			}
		}
	}
	return yes
}

func (r *rule) checkMapping(n *yaml.Node) verdict {
	if len(n.Content)%2 != 0 {
		return maybe
	}
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return maybe // the converter follows an alias as a key
		}
		if r.propNames != nil {
			if vd := r.propNames.checkKey(k.Value); vd != yes {
				return vd
			}
		}
		s := r.addl
		if ps, ok := r.props[k.Value]; ok {
			s = ps
		}
		vd := plainVerdict(v)
		if s != nil {
			vd = s.check(v)
		}
		if vd == no && repeated(n, i) {
			vd = maybe // the validator sees only the last value of a key
		}
		if vd != yes {
			return vd
		}
	}
	for _, req := range r.required {
		if !hasKey(n, req) {
			return no
		}
	}
	return yes
}

// checkKey judges a mapping key, which the converter makes a string
// whatever its YAML type.
func (r *rule) checkKey(k string) verdict {
	return r.check(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k})
}

func (r *rule) checkSequence(n *yaml.Node) verdict {
	if r.minItems >= 0 && len(n.Content) < r.minItems || r.maxItems >= 0 && len(n.Content) > r.maxItems {
		return no
	}
	for _, e := range n.Content {
		vd := plainVerdict(e)
		if r.items != nil {
			vd = r.items.check(e)
		}
		if vd != yes {
			return vd
		}
	}
	if r.unique {
		return unique(n)
	}
	return yes
}

func (r *rule) checkString(s string) verdict {
	if r.minLen >= 0 || r.maxLen >= 0 {
		l := utf8.RuneCountInString(s)
		if r.minLen >= 0 && l < r.minLen || r.maxLen >= 0 && l > r.maxLen {
			return no
		}
	}
	if r.pattern != "" {
		re := r.regexp(s)
		if re == nil {
			return maybe
		}
		if !re.MatchString(s) {
			return no
		}
	}
	return yes
}

// checkNumber compares v with the bounds as the validator does: both as
// exact rationals.
func (r *rule) checkNumber(v any) verdict {
	if r.min == nil && r.max == nil && r.exMin == nil && r.exMax == nil {
		return yes
	}
	x, ok := rat(v)
	if !ok {
		return maybe
	}
	if r.min != nil && x.Cmp(r.min) < 0 || r.max != nil && x.Cmp(r.max) > 0 ||
		r.exMin != nil && x.Cmp(r.exMin) <= 0 || r.exMax != nil && x.Cmp(r.exMax) >= 0 {
		return no
	}
	return yes
}

// inEnum judges a value of type t (str for a string, v for another
// scalar) against r's enum.
func (r *rule) inEnum(t jsonType, str string, v any) verdict {
	if t == tObject || t == tArray {
		for _, e := range r.enum {
			switch e.(type) {
			case map[string]any, []any:
				return maybe // the walk compares scalars only
			}
		}
		return no
	}
	if t == tString {
		v = str
	}
	for _, e := range r.enum {
		if equal(v, e) {
			return yes
		}
	}
	return no
}

// delegated judges n under r with the validator, compiling r first.
func (r *rule) delegated(n *yaml.Node) verdict {
	if !plain(n) {
		return maybe
	}
	s := r.validator()
	if s == nil {
		return maybe
	}
	v, err := Value(n)
	if err != nil {
		return maybe
	}
	if s.Validate(v) != nil {
		return no
	}
	return yes
}

// typeOf returns the JSON type the converter gives n, and its value: str
// for a string, v for another scalar. ok is false for an alias.
func typeOf(n *yaml.Node) (t jsonType, str string, v any, ok bool) {
	switch n.Kind {
	case yaml.MappingNode:
		return tObject, "", nil, true
	case yaml.SequenceNode:
		return tArray, "", nil, true
	case yaml.ScalarNode:
		if n.ShortTag() == "!!str" {
			return tString, n.Value, nil, true
		}
		switch x := scalar(n).(type) {
		case nil:
			return tNull, "", nil, true
		case bool:
			return tBool, "", x, true
		case int64, float64:
			return tNumber, "", x, true
		case string:
			return tString, x, nil, true
		}
	}
	return 0, "", nil, false
}

// rat is a number as the validator reads it, from its printed form.
func rat(v any) (*big.Rat, bool) {
	switch v.(type) {
	case int64, float64, json.Number:
		return new(big.Rat).SetString(fmt.Sprint(v))
	}
	return nil, false
}

func isInteger(v any) bool {
	if _, ok := v.(int64); ok {
		return true
	}
	x, ok := rat(v)
	return ok && x.IsInt()
}

// equal compares two scalars as the validator's enum does: numbers by
// value, whatever their Go type.
func equal(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool:
		x, ok := b.(bool)
		return ok && a == x
	case string:
		x, ok := b.(string)
		return ok && a == x
	}
	x, ok1 := rat(a)
	y, ok2 := rat(b)
	return ok1 && ok2 && x.Cmp(y) == 0
}

// unique judges uniqueItems over a sequence of scalars; any other item
// is left to the validator.
func unique(n *yaml.Node) verdict {
	vals := make([]any, len(n.Content))
	for i, e := range n.Content {
		t, str, v, ok := typeOf(e)
		if !ok || t == tObject || t == tArray {
			return maybe
		}
		if t == tString {
			v = str
		}
		for _, w := range vals[:i] {
			if equal(v, w) {
				return no
			}
		}
		vals[i] = v
	}
	return yes
}

// repeated reports whether the key at n.Content[i] appears again later
// in mapping n.
func repeated(n *yaml.Node, i int) bool {
	for j := i + 2; j < len(n.Content); j += 2 {
		if k := n.Content[j]; k.Kind != yaml.ScalarNode || k.Value == n.Content[i].Value {
			return true
		}
	}
	return false
}

func plainVerdict(n *yaml.Node) verdict {
	if plain(n) {
		return yes
	}
	return maybe
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
