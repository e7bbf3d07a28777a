package spec

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/schemas"
)

// schemaKey is what a schema says about one key path: its `default`,
// `enum` and descriptions, wherever its subschemas ($ref, if/then/else)
// put them.
type schemaKey struct {
	defaults     []any
	enums        [][]any
	descriptions []string
	// props are the keys its properties name; names are its
	// propertyNames enums.
	props map[string]bool
	names [][]any
}

// schemaKeys walks a JSON Schema document and returns what it says per
// key path, spelled as Fact.Key spells it.
func schemaKeys(t *testing.T, data []byte) map[string]*schemaKey {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	defs, _ := root["$defs"].(map[string]any)
	out := map[string]*schemaKey{}
	at := func(path string) *schemaKey {
		if out[path] == nil {
			out[path] = &schemaKey{}
		}
		return out[path]
	}
	join := func(path, key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	var walk func(v any, path string, depth int)
	walk = func(v any, path string, depth int) {
		m, ok := v.(map[string]any)
		if !ok || depth > 30 {
			return
		}
		if ref, ok := m["$ref"].(string); ok {
			// Only references inside the document: skill-md's refer
			// to the skill schema, which is walked on its own.
			if name, ok := strings.CutPrefix(ref, "#/$defs/"); ok {
				walk(defs[name], path, depth+1)
			}
		}
		if d, ok := m["default"]; ok {
			at(path).defaults = append(at(path).defaults, d)
		}
		if e, ok := m["enum"].([]any); ok {
			at(path).enums = append(at(path).enums, e)
		}
		if d, ok := m["description"].(string); ok && path != "" {
			at(path).descriptions = append(at(path).descriptions, d)
		}
		if pn, ok := m["propertyNames"].(map[string]any); ok {
			if e, ok := pn["enum"].([]any); ok {
				at(path).names = append(at(path).names, e)
			}
		}
		if props, ok := m["properties"].(map[string]any); ok {
			if at(path).props == nil {
				at(path).props = map[string]bool{}
			}
			for k, p := range props {
				at(path).props[k] = true
				walk(p, join(path, k), depth+1)
			}
		}
		walk(m["additionalProperties"], join(path, "*"), depth+1)
		walk(m["items"], path+"[]", depth+1)
		for _, k := range []string{"if", "then", "else"} {
			walk(m[k], path, depth+1)
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			list, _ := m[k].([]any)
			for _, s := range list {
				walk(s, path, depth+1)
			}
		}
	}
	walk(root, "", 0)
	return out
}

// TestSchemaKeysAreDecoderKeys: each mapping's keys, as the decoder
// knows them (for unknown-key errors and their suggestions), are the
// keys its schema declares, so a key added to one is added to the other.
func TestSchemaKeysAreDecoderKeys(t *testing.T) {
	for kind, paths := range map[string]map[string][]string{
		schemas.KindWorkflow: {"": workflowKeys, "limits": limitsKeys, "limits.agents.*": budgetKeys, "prices.*": priceKeys,
			"host": hostKeys, "board": boardKeys, "tasks[]": taskKeys, "sandbox": sandboxKeys},
		schemas.KindSkill: {"": skillKeys, "tools[]": toolKeys, "tools[].run": runKeys, "mcp.*": mcpKeys,
			"agents.*": agentKeys, "agents.*.item-visibility": visKeys, "agents.*.flow": flowKeys,
			"sandbox": sandboxOwnKeys, "tools[].run.sandbox": sandboxOwnKeys, "mcp.*.sandbox": sandboxOwnKeys},
	} {
		data := map[string][]byte{schemas.KindWorkflow: schemas.Workflow(), schemas.KindSkill: schemas.Skill()}[kind]
		keys := schemaKeys(t, data)
		for path, want := range paths {
			sk := keys[path]
			if sk == nil || sk.props == nil {
				t.Errorf("%s schema: %q declares no keys; the decoder knows %v", kind, path, want)
				continue
			}
			got := slices.Sorted(maps.Keys(sk.props))
			if !slices.Equal(got, slices.Sorted(slices.Values(want))) {
				t.Errorf("%s schema: %q declares keys %v; the decoder knows %v", kind, path, got, want)
			}
			for _, names := range sk.names {
				if !slices.Equal(names, anys(want)) {
					t.Errorf("%s schema: %q allows the names %v; the decoder knows %v, in that order", kind, path, names, want)
				}
			}
		}
	}
}

// jsonValue is v as it reads back from JSON: numbers are float64.
func jsonValue(v any) any {
	if n, ok := v.(int); ok {
		return float64(n)
	}
	return v
}

// describedNumber finds the number a description gives as its default:
// "(default 3)", "(default: 1,000)". A description that states a default
// in words ("step (default; ...)", "sub (client only, the default)") is
// checked for the default's word instead.
var describedNumber = regexp.MustCompile(`\(default:? ([0-9][0-9,]*)`)

// TestSchemasAgreeWithFacts: every `default` and `enum` of the skill and
// workflow schemas is the one spec.Facts states for that key, and every
// fact is in its schema; a description that names a default names the
// same one. A default or a value changed in one place and not the other
// fails here, naming the key.
func TestSchemasAgreeWithFacts(t *testing.T) {
	docs := map[string][]byte{schemas.KindWorkflow: schemas.Workflow(), schemas.KindSkill: schemas.Skill(), schemas.KindEval: schemas.Eval()}
	facts := map[string]map[string]Fact{}
	for _, f := range Facts() {
		if docs[f.Kind] == nil {
			t.Fatalf("fact %s has kind %q, which has no schema here", f.Key, f.Kind)
		}
		if facts[f.Kind] == nil {
			facts[f.Kind] = map[string]Fact{}
		}
		if _, dup := facts[f.Kind][f.Key]; dup {
			t.Errorf("%s %s: two facts for one key", f.Kind, f.Key)
		}
		facts[f.Kind][f.Key] = f
	}
	for kind, data := range docs {
		keys := schemaKeys(t, data)
		for key, f := range facts[kind] {
			sk := keys[key]
			if sk == nil {
				t.Errorf("%s schema: %s: spec.Facts states it, the schema has no such key", kind, key)
				continue
			}
			checkDefault(t, kind, key, f.Default, sk)
			switch {
			case f.Values == nil && len(sk.enums) > 0:
				t.Errorf("%s schema: %s: enum %v, spec.Facts lists no values", kind, key, sk.enums[0])
			case f.Values != nil && len(sk.enums) == 0:
				t.Errorf("%s schema: %s: no enum, spec.Facts lists %v", kind, key, f.Values)
			}
			for _, e := range sk.enums {
				if !slices.Equal(e, f.Values) {
					t.Errorf("%s schema: %s: enum %v, spec.Facts lists %v", kind, key, e, f.Values)
				}
			}
		}
		for key, sk := range keys {
			if _, ok := facts[kind][key]; ok {
				continue
			}
			if len(sk.defaults) > 0 || len(sk.enums) > 0 {
				t.Errorf("%s schema: %s: has a default or an enum (%v %v) that spec.Facts does not state", kind, key, sk.defaults, sk.enums)
			}
		}
	}
}

func checkDefault(t *testing.T, kind, key string, want any, sk *schemaKey) {
	t.Helper()
	if want == nil {
		if len(sk.defaults) > 0 {
			t.Errorf("%s schema: %s: default %v, spec.Facts states none", kind, key, sk.defaults[0])
		}
		return
	}
	if len(sk.defaults) == 0 {
		t.Errorf("%s schema: %s: no default, spec.Facts states %v", kind, key, want)
	}
	for _, d := range sk.defaults {
		if d != jsonValue(want) {
			t.Errorf("%s schema: %s: default %v, spec.Facts states %v", kind, key, d, want)
		}
	}
	text := fmt.Sprint(want)
	word := regexp.MustCompile(`(^|[^a-z0-9-])` + regexp.QuoteMeta(text) + `($|[^a-z0-9-])`)
	for _, d := range sk.descriptions {
		if !strings.Contains(strings.ToLower(d), "default") {
			continue
		}
		if m := describedNumber.FindStringSubmatch(d); m != nil && strings.ReplaceAll(m[1], ",", "") != text {
			t.Errorf("%s schema: %s: the description says default %s, spec.Facts states %v", kind, key, m[1], want)
		} else if !word.MatchString(d) {
			t.Errorf("%s schema: %s: the description speaks of a default but not of %v, which spec.Facts states: %q", kind, key, want, d)
		}
	}
}

// TestFactsAreWhatLoadingDoes: the defaults the table states for keys
// spec fills in are what loading and WithDefaults give an agent and a
// workflow that set none, so the table cannot state a default the code
// does not use.
func TestFactsAreWhatLoadingDoes(t *testing.T) {
	dir := t.TempDir()
	src := "id: s\nname: S\ndescription: d\nversion: 1.0.0\nagents:\n  plain: {prompt: p}\n  conv: {prompt: p, context-supply: conversation, flow: recent}\n"
	s, diags := loadSkill(filepath.Join(dir, "s.skill.yaml"), []byte(src))
	if len(diags.Errors(false)) > 0 {
		t.Fatal(diags)
	}
	plain, conv := s.Agents[0].WithDefaults(), s.Agents[1].WithDefaults()
	l := Limits{}.WithDefaults()
	d, _ := ParseDurability("")
	got := map[string]any{
		"durability":               string(d),
		"agents.*.context-supply":  map[ContextSupply]string{SupplyIsolated: supplyIsolatedName}[plain.ContextSupply],
		"agents.*.turns":           conv.Turns,
		"agents.*.item-visibility": map[Visibility]string{VisibilitySub: visibilitySubName, VisibilityPrimary: visibilityPrimName}[plain.Visibility],
		"agents.*.flow":            string(plain.Flow.Policy),
		"agents.*.flow.policy":     string(plain.Flow.Policy),
		"agents.*.flow.last":       conv.Flow.Last,
		"agents.*.output-repairs":  plain.Repairs(),
	}
	for _, lf := range limitFields {
		if lf.def > 0 {
			got["limits."+lf.key] = *lf.field(&l)
		}
	}
	checked := 0
	for _, f := range Facts() {
		code, ok := got[f.Key]
		if !ok {
			continue
		}
		checked++
		if code != f.Default {
			t.Errorf("%s: loading gives %v, spec.Facts states %v", f.Key, code, f.Default)
		}
	}
	if checked != len(got) {
		t.Errorf("%d of the %d keys checked are in spec.Facts", checked, len(got))
	}
}
