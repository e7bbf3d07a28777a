package chaos

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// props returns the properties of an object schema, or nil.
func props(raw json.RawMessage) map[string]any {
	var s map[string]any
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	p, _ := s["properties"].(map[string]any)
	return p
}

// sortedKeys keeps draws reproducible: map order is random.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func typeOf(schema any) string {
	s, _ := schema.(map[string]any)
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		if len(t) > 0 {
			if ts, ok := t[0].(string); ok {
				return ts
			}
		}
	}
	if _, ok := s["properties"]; ok {
		return "object"
	}
	return ""
}

// fromSchema draws arguments that a tool with parameters raw most likely
// accepts: required properties always, optional ones half the time.
func (a *actor) fromSchema(raw json.RawMessage) any {
	var s map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return map[string]any{}
	}
	v := a.value("", s, 0)
	if _, ok := v.(map[string]any); !ok {
		return map[string]any{}
	}
	return v
}

func (a *actor) value(name string, s map[string]any, depth int) any {
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return enum[a.r.IntN(len(enum))]
	}
	switch name {
	case "handle":
		return a.handle()
	case "heading":
		return a.pick([]string{"Steps", "Nope", "Setup > Install", "#", strings.Repeat("h", 100)})
	case "pattern":
		return a.pick([]string{"BODY", "Steps", "(", ".*", "[a-z]+", `\p{L}+`, "a{1000}{1000}"})
	case "path":
		return a.pick([]string{"nope.md", "../../etc/passwd", "/etc/passwd", "."})
	case "key":
		return fmt.Sprintf("k%d", a.r.IntN(3))
	}
	switch typeOf(s) {
	case "object":
		if depth > 3 {
			return map[string]any{}
		}
		out := map[string]any{}
		ps, _ := s["properties"].(map[string]any)
		required := map[string]bool{}
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if rs, ok := r.(string); ok {
					required[rs] = true
				}
			}
		}
		for _, k := range sortedKeys(ps) {
			ks, _ := ps[k].(map[string]any)
			if required[k] || a.chance(0.5) {
				out[k] = a.value(k, ks, depth+1)
			}
		}
		return out
	case "string":
		return a.word()
	case "integer", "number":
		lo, hi := 0, 10
		if v, ok := s["minimum"].(float64); ok {
			lo = int(v)
		}
		if v, ok := s["maximum"].(float64); ok && int(v) < lo+10 {
			hi = int(v) - lo
		}
		if a.chance(0.1) {
			// Out of range, or not an integer.
			return []any{-1, 1 << 40, 1.5}[a.r.IntN(3)]
		}
		return lo + a.r.IntN(max(hi, 0)+1)
	case "boolean":
		return a.chance(0.5)
	case "array":
		items, _ := s["items"].(map[string]any)
		var out []any
		for range a.r.IntN(3) {
			out = append(out, a.value("", items, depth+1))
		}
		return out
	}
	// No type: any JSON value will do.
	return a.pick([]string{"v", "1", ""})
}
