package outschema

import (
	"slices"
	"strings"
)

// geminiKeys are the keywords Gemini's responseJsonSchema takes (the
// generateContent reference, GenerationConfig.responseJsonSchema);
// propertyOrdering is its own.
var geminiKeys = map[string]bool{"$id": true, "$defs": true, "$ref": true, "$anchor": true,
	"type": true, "format": true, "title": true, "description": true, "enum": true,
	"items": true, "prefixItems": true, "minItems": true, "maxItems": true, "minimum": true,
	"maximum": true, "anyOf": true, "oneOf": true, "properties": true,
	"additionalProperties": true, "required": true, "propertyOrdering": true}

// geminiFormats are the string formats Gemini's structured output knows.
var geminiFormats = map[string]bool{"date-time": true, "date": true, "time": true}

// Gemini fits s to Gemini's structured output: a copy with only the
// keywords it takes (a const becomes a one-value enum; an enum of other
// than strings and numbers, an unknown format and the constraints it
// cannot express are dropped; a $ref keeps only its $-keywords, as the
// API requires), and ok false when dropping would change the answer's
// shape rather than loosen it: allOf, a keyword beyond a grammar, a
// boolean schema, a recursive or non-local $ref, or definitions the
// subset has no place for. Any root is fine: Gemini, unlike the others,
// takes arrays and scalars at the top. (M4)
func Gemini(s map[string]any) (out map[string]any, ok bool) {
	if s == nil || recursive(s) {
		return nil, false
	}
	ok = true
	var fit func(v any) any
	fit = func(v any) any {
		m, isMap := v.(map[string]any)
		if !isMap {
			ok = false // a boolean schema, or not a schema at all
			return v
		}
		for _, k := range beyond {
			if _, has := m[k]; has && k != "prefixItems" {
				ok = false
			}
		}
		for _, k := range []string{"allOf", "definitions"} {
			if _, has := m[k]; has {
				ok = false
			}
		}
		if ref, has := m["$ref"].(string); has {
			if !strings.HasPrefix(ref, "#") {
				ok = false
			}
			c := map[string]any{}
			for k, x := range m {
				if strings.HasPrefix(k, "$") {
					c[k] = x
				}
			}
			return c
		}
		c := make(map[string]any, len(m))
		for k, x := range m {
			if geminiKeys[k] {
				c[k] = x
			}
		}
		if v, has := m["const"]; has && c["enum"] == nil {
			c["enum"] = []any{v}
		}
		if e, has := c["enum"].([]any); has && slices.ContainsFunc(e, func(x any) bool {
			switch x.(type) {
			case string, float64:
				return false
			}
			return true
		}) {
			delete(c, "enum")
		}
		if f, isStr := c["format"].(string); isStr && !geminiFormats[f] {
			delete(c, "format")
		}
		fitChildren(c, fit, []string{"properties", "$defs"}, []string{"anyOf", "oneOf", "prefixItems"}, []string{"items", "additionalProperties"})
		return c
	}
	out, _ = fit(s).(map[string]any)
	return out, ok
}
