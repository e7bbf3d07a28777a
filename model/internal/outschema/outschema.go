package outschema

import (
	"encoding/json"
	"strings"
)

// Decode reads a schema as a JSON object; nil when it is not one.
func Decode(raw json.RawMessage) map[string]any {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// beyond are keywords no provider grammar takes: a schema using one is
// never passed on.
var beyond = []string{"not", "if", "then", "else", "dependentRequired", "dependentSchemas",
	"unevaluatedProperties", "unevaluatedItems", "propertyNames", "contains", "minContains",
	"maxContains", "prefixItems", "patternProperties", "$dynamicRef", "$dynamicAnchor", "$recursiveRef"}

// children calls f on every subschema of s, with its place.
func children(s map[string]any, f func(v any)) {
	for _, k := range []string{"properties", "$defs", "definitions"} {
		if m, ok := s[k].(map[string]any); ok {
			for _, v := range m {
				f(v)
			}
		}
	}
	for _, k := range []string{"anyOf", "allOf", "oneOf"} {
		if a, ok := s[k].([]any); ok {
			for _, v := range a {
				f(v)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if v, ok := s[k].(map[string]any); ok {
			f(v)
		}
	}
}

func isObject(s map[string]any) bool {
	if s["type"] == "object" {
		return true
	}
	_, props := s["properties"]
	return props
}

// rootObject reports whether a schema's root is an object schema: both
// providers want an object at the top.
func rootObject(s map[string]any) bool {
	return s != nil && s["type"] == "object"
}

// Strict reports whether s fits OpenAI's strict structured output: an
// object at the root, every object closed (additionalProperties false)
// with every property required, no oneOf/allOf at all, no anyOf at the
// root, and none of the keywords beyond a grammar.
func Strict(s map[string]any) bool {
	if !rootObject(s) || s["anyOf"] != nil {
		return false
	}
	ok := true
	var walk func(v any)
	walk = func(v any) {
		m, isMap := v.(map[string]any)
		if !isMap {
			if _, isBool := v.(bool); isBool {
				ok = false // true/false schemas are not in the subset
			}
			return
		}
		for _, k := range beyond {
			if _, has := m[k]; has {
				ok = false
			}
		}
		if m["oneOf"] != nil || m["allOf"] != nil {
			ok = false
		}
		if ref, has := m["$ref"].(string); has && !strings.HasPrefix(ref, "#") {
			ok = false
		}
		if isObject(m) {
			if m["additionalProperties"] != false {
				ok = false
			}
			props, _ := m["properties"].(map[string]any)
			req := map[string]bool{}
			if r, isList := m["required"].([]any); isList {
				for _, x := range r {
					if name, isStr := x.(string); isStr {
						req[name] = true
					}
				}
			}
			for name := range props {
				if !req[name] {
					ok = false
				}
			}
		}
		children(m, walk)
	}
	walk(s)
	return ok
}

// dropped are constraints Anthropic's grammar does not express: they are
// taken out of the schema sent (fsd still checks them).
var dropped = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
	"minLength", "maxLength", "pattern", "maxItems", "uniqueItems", "minProperties", "maxProperties"}

// formats are the string formats Anthropic's grammar knows; others are
// dropped.
var formats = map[string]bool{"date-time": true, "time": true, "date": true, "duration": true,
	"email": true, "hostname": true, "uri": true, "ipv4": true, "ipv6": true, "uuid": true}

// Relaxed fits s to Anthropic's structured output: a copy with the
// constraints its grammar cannot express dropped, every object without
// additionalProperties closed (an answer without extra properties is
// valid either way), and ok false when the schema cannot be made to fit
// (an open object, a recursive or non-local $ref, a keyword beyond a
// grammar, a non-object root).
func Relaxed(s map[string]any) (out map[string]any, ok bool) {
	if !rootObject(s) || recursive(s) {
		return nil, false
	}
	ok = true
	var fit func(v any) any
	fit = func(v any) any {
		m, isMap := v.(map[string]any)
		if !isMap {
			if _, isBool := v.(bool); isBool {
				ok = false
			}
			return v
		}
		c := make(map[string]any, len(m)+1)
		for k, x := range m {
			c[k] = x
		}
		for _, k := range beyond {
			if _, has := c[k]; has {
				ok = false
			}
		}
		if ref, has := c["$ref"].(string); has && !strings.HasPrefix(ref, "#") {
			ok = false
		}
		for _, k := range dropped {
			delete(c, k)
		}
		if n, isNum := c["minItems"].(float64); isNum && n > 1 {
			delete(c, "minItems")
		}
		if f, isStr := c["format"].(string); isStr && !formats[f] {
			delete(c, "format")
		}
		if isObject(c) {
			switch ap := c["additionalProperties"].(type) {
			case nil:
				c["additionalProperties"] = false
			case bool:
				if ap {
					ok = false
				}
			default:
				ok = false // a map of values: not expressible
			}
		}
		fitChildren(c, fit, []string{"properties", "$defs", "definitions"}, []string{"anyOf", "allOf", "oneOf"}, []string{"items"})
		return c
	}
	out, _ = fit(s).(map[string]any)
	return out, ok
}

// recursive reports whether a definition of s reaches itself through
// $refs (or the root is referred to from inside, "#").
func recursive(s map[string]any) bool {
	defs := map[string]map[string]any{}
	for _, k := range []string{"$defs", "definitions"} {
		if m, ok := s[k].(map[string]any); ok {
			for name, v := range m {
				if d, isMap := v.(map[string]any); isMap {
					defs["#/"+k+"/"+name] = d
				}
			}
		}
	}
	refs := func(root map[string]any) []string {
		var out []string
		var walk func(v any)
		walk = func(v any) {
			m, ok := v.(map[string]any)
			if !ok {
				return
			}
			if r, ok := m["$ref"].(string); ok {
				out = append(out, r)
			}
			for k, x := range m {
				if k == "$defs" || k == "definitions" {
					continue // walked as definitions of their own
				}
				switch y := x.(type) {
				case map[string]any:
					walk(y)
				case []any:
					for _, e := range y {
						walk(e)
					}
				}
			}
		}
		walk(root)
		return out
	}
	for _, r := range refs(s) {
		if r == "#" {
			return true
		}
	}
	// Depth-first search for a cycle among the definitions.
	state := map[string]int{} // 1 on the path, 2 done
	var visit func(name string) bool
	visit = func(name string) bool {
		switch state[name] {
		case 1:
			return true
		case 2:
			return false
		}
		state[name] = 1
		for _, r := range refs(defs[name]) {
			if r == "#" {
				return true
			}
			if _, known := defs[r]; known && visit(r) {
				return true
			}
		}
		state[name] = 2
		return false
	}
	for name := range defs {
		if visit(name) {
			return true
		}
	}
	return false
}

// fitChildren replaces the subschemas of c under the given keywords with
// fit of each: maps of schemas (properties), lists of schemas (anyOf)
// and single schemas (items).
func fitChildren(c map[string]any, fit func(any) any, maps, lists, single []string) {
	for _, k := range maps {
		if sub, has := c[k].(map[string]any); has {
			n := make(map[string]any, len(sub))
			for name, x := range sub {
				n[name] = fit(x)
			}
			c[k] = n
		}
	}
	for _, k := range lists {
		if a, has := c[k].([]any); has {
			n := make([]any, len(a))
			for i, x := range a {
				n[i] = fit(x)
			}
			c[k] = n
		}
	}
	for _, k := range single {
		if sub, has := c[k].(map[string]any); has {
			c[k] = fit(sub)
		}
	}
}
