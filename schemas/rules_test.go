package schemas

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/internal/fanout"
)

// testRules builds the walk's rules of one schema, given as JSON, and the
// validator's compiled schema of the same, both as t.json.
func testRules(t testing.TB, schema string) (*rule, *jsonschema.Schema) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mem:///t.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem:///t.json")
	if err != nil {
		t.Fatal(err)
	}
	f := newForest("mem:///", func(file string) (string, bool) { return schema, file == "t.json" }, c.Compile)
	r, err := f.root("t.json")
	if err != nil {
		t.Fatal(err)
	}
	return r.built(), s
}

func yamlDoc(t testing.TB, src string) *yaml.Node {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatal(err)
	}
	return n.Content[0]
}

// Every keyword the walk checks gives the validator's verdict, yes or
// no, on values each side of it: a no decides an if, a oneOf or a not,
// so it must be as sure as a yes.
func TestRuleKeywords(t *testing.T) {
	for _, tc := range []struct {
		schema string
		docs   []string // judged yes or no, never maybe unless marked "?"
	}{
		{`{"type": "string"}`, []string{"x", "1", "'1'", "true", "null", "{}", "[]", "2021-01-01", ".inf"}},
		{`{"type": ["integer", "null"]}`, []string{"1", "1.0", "1.5", "~", "x", "1e3", "0x10", "99999999999999999999"}},
		{`{"type": "number"}`, []string{"1", "1.5", "x", "true"}},
		{`{"type": "boolean"}`, []string{"true", "yes", "on", "False", "1"}},
		{`{"enum": ["off", "on", true, false]}`, []string{"off", "on", "true", "false", "yes", "1", "{}", "[]"}},
		{`{"enum": [1, "1", null]}`, []string{"1", "1.0", "'1'", "~", "2", "null"}},
		{`{"minLength": 2, "maxLength": 3}`, []string{"ab", "a", "abcd", "ää", "1"}},
		{`{"pattern": "^[a-z]+$"}`, []string{"abc", "aBc", "1", "{}"}},
		{`{"minimum": 1, "maximum": 2.5}`, []string{"1", "0", "0.9999", "2.5", "2.6", "x"}},
		{`{"exclusiveMinimum": 0, "exclusiveMaximum": 0.1}`, []string{"0", "0.1", "0.05", "0.1000000000000000055"}},
		{`{"minItems": 1, "maxItems": 2, "items": {"type": "string"}}`, []string{"[]", "[a]", "[a, b, c]", "[1]", "x"}},
		{`{"uniqueItems": true}`, []string{"[a, b]", "[a, a]", "[1, 1.0]", "[1, '1']", "[true, 'true']"}},
		{`{"required": ["a"], "properties": {"a": {"type": "string"}}, "additionalProperties": false}`, []string{"{a: x}", "{}", "{a: 1}", "{a: x, b: y}", "?{a: 1, a: x}", "?{a: x, a: 1}"}},
		{`{"additionalProperties": {"type": "integer"}}`, []string{"{a: 1}", "{a: x}", "{}"}},
		{`{"propertyNames": {"pattern": "^[a-z]$"}}`, []string{"{a: 1}", "{ab: 1}", "{1: 1}"}},
		{`{"propertyNames": {"enum": ["a", "b"]}}`, []string{"{a: 1, b: 2}", "{c: 1}"}},
		{`{"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}`, []string{"{a: 1}", "{b: 1}", "{a: 1, b: 1}", "{}", "x"}},
		{`{"anyOf": [{"type": "string", "minLength": 1}, {"type": "object"}]}`, []string{"x", "''", "{}", "1"}},
		{`{"allOf": [{"type": "string"}, {"minLength": 2}]}`, []string{"xy", "x", "1"}},
		{`{"not": {"type": "string"}}`, []string{"x", "1"}},
		{`{"if": {"type": "array"}, "then": {"items": {"type": "string"}}, "else": {"enum": ["off", true]}}`, []string{"[a]", "[1]", "off", "true", "on"}},
		{`{"if": {"type": "string"}, "then": {"minLength": 1}}`, []string{"x", "''", "1"}},
		{`{"$ref": "#/$defs/d", "$defs": {"d": {"type": "string"}}}`, []string{"x", "1"}},
		{`{"properties": {"n": {"$ref": "#"}}, "type": "object"}`, []string{"{n: {n: {}}}", "{n: {n: 1}}"}},
		{`{"items": {"minProperties": 1}}`, []string{"[{a: 1}]", "[{}]"}}, // delegated: judged by the validator
		{`true`, []string{"x", "{a: [1]}"}},
		{`false`, []string{"x"}},
	} {
		r, s := testRules(t, tc.schema)
		for _, src := range tc.docs {
			src, mayDefer := strings.CutPrefix(src, "?")
			n := yamlDoc(t, src)
			vd := r.check(n)
			v, err := Value(n)
			if err != nil {
				t.Fatal(err)
			}
			valid := s.Validate(v) == nil
			if vd == maybe && !mayDefer || vd != maybe && (vd == yes) != valid {
				t.Errorf("%s on %q: the walk says %v, the validator valid=%v", tc.schema, src, map[verdict]string{maybe: "maybe", yes: "yes", no: "no"}[vd], valid)
			}
		}
	}
}

// annotations are the 2020-12 keywords that assert nothing (the core
// vocabulary's $comment and $defs, and the meta-data vocabulary): the
// only ones a rule may pass over without checking or delegating.
// https://json-schema.org/draft/2020-12/json-schema-validation#section-9
var annotations = []string{"$comment", "$defs", "title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples"}

// The rules ignore annotations only: anything else they neither check
// nor delegate would let the walk accept what the validator rejects.
func TestRulesIgnoreOnlyAnnotations(t *testing.T) {
	for k := range ignored {
		if !slices.Contains(annotations, k) {
			t.Errorf("rules ignore %q, which is not an annotation", k)
		}
	}
}

// A schema with a keyword the walk does not check is delegated: the walk
// takes the validator's verdict on it, on a value each side of it.
func TestRulesDelegateOtherKeywords(t *testing.T) {
	for _, tc := range []struct{ kw, good, bad string }{
		{`"const": "a"`, "a", "b"},
		{`"multipleOf": 2`, "4", "3"},
		{`"minProperties": 1`, "{a: 1}", "{}"},
		{`"maxProperties": 1`, "{a: 1}", "{a: 1, b: 2}"},
		{`"patternProperties": {"^x": {"type": "string"}}`, "{xa: s}", "{xa: 1}"},
		{`"dependentRequired": {"a": ["b"]}`, "{a: 1, b: 2}", "{a: 1}"},
		{`"dependentSchemas": {"a": {"required": ["b"]}}`, "{a: 1, b: 2}", "{a: 1}"},
		{`"contains": {"type": "integer"}`, "[a, 1]", "[a]"},
		{`"prefixItems": [{"type": "string"}]`, "[a]", "[1]"},
		{`"unevaluatedProperties": false`, "{}", "{a: 1}"},
		{`"unevaluatedItems": false`, "[]", "[1]"},
		{`"$id": "mem:///other.json", "type": "string"`, "a", "1"},
		{`"$anchor": "a", "type": "string"`, "a", "1"},
		{`"x-unknown": 1, "type": "string"`, "a", "1"},
	} {
		schema := fmt.Sprintf(`{"properties": {"p": {%s}}}`, tc.kw)
		r, s := testRules(t, schema)
		p := r.props["p"]
		if p == nil || !p.built().delegate {
			t.Errorf("%s: not delegated", tc.kw)
			continue
		}
		for _, src := range []string{tc.good, tc.bad} {
			n := yamlDoc(t, "p: "+src)
			v, _ := Value(n)
			if valid := s.Validate(v) == nil; (r.check(n) == yes) != valid {
				t.Errorf("%s on %q: the walk disagrees with the validator (valid=%v)", tc.kw, src, valid)
			}
		}
	}
}

// Every schema object in fsd's schemas has a rule that checks each of
// its keywords or is delegated, and every delegated rule compiles.
func TestRulesKnowEveryKeyword(t *testing.T) {
	delegated := 0
	for kind := range files {
		buildAll(rules(t, kind), map[*rule]bool{})
	}
	for _, file := range files {
		var doc any
		if err := json.Unmarshal(mustEmbedded(t, file), &doc); err != nil {
			t.Fatal(err)
		}
		var walk func(ptr string, v any)
		walk = func(ptr string, v any) {
			m, ok := v.(map[string]any)
			if !ok {
				return
			}
			embeddedRules.mu.Lock()
			r := embeddedRules.rules[file+"#"+ptr]
			embeddedRules.mu.Unlock()
			if r == nil {
				if ptr == "" || !strings.Contains(ptr, "$defs") {
					t.Errorf("%s#%s: no rule", file, ptr)
				}
				return // a definition nothing refers to
			}
			if r.delegate {
				delegated++
				if r.validator() == nil {
					t.Errorf("%s#%s: delegated but does not compile", file, ptr)
				}
			}
			for k, x := range m {
				known := slices.Contains(walked, k) || slices.Contains(annotations, k) || ptr == "" && (k == "$schema" || k == "$id")
				if !known && !r.delegate {
					t.Errorf("%s#%s: keyword %q is neither checked nor delegated", file, ptr, k)
				}
				switch k {
				case "properties", "$defs":
					for name, s := range x.(map[string]any) {
						walk(ptr+"/"+k+"/"+escape(name), s)
					}
				case "allOf", "anyOf", "oneOf":
					for i, s := range x.([]any) {
						walk(fmt.Sprintf("%s/%s/%d", ptr, k, i), s)
					}
				case "additionalProperties", "propertyNames", "items", "if", "then", "else", "not":
					walk(ptr+"/"+k, x)
				}
			}
		}
		walk("", doc)
	}
	t.Logf("%d delegated schemas", delegated)
}

// buildAll builds r and every rule it leads to.
func buildAll(r *rule, seen map[*rule]bool) {
	if r == nil || seen[r] {
		return
	}
	seen[r] = true
	r.built()
	for _, s := range append([]*rule{r.ref, r.ifR, r.thenR, r.elseR, r.not, r.addl, r.propNames, r.items}, slices.Concat(r.allOf, r.anyOf, r.oneOf)...) {
		buildAll(s, seen)
	}
	for _, s := range r.props {
		buildAll(s, seen)
	}
}

func mustEmbedded(t *testing.T, file string) []byte {
	data, ok := embedded(file)
	if !ok {
		t.Fatalf("%s not embedded", file)
	}
	return []byte(data)
}

// BenchmarkRules is what a cold fsd run pays to judge its manifests (a
// one-task fan-out's workflow, skill and script) without the validator:
// decoding the schemas, building the rules the manifests reach, and the
// walk; compiling the same schemas is BenchmarkCompile.
func BenchmarkRules(b *testing.B) {
	docs := runDocs(b)
	b.ReportAllocs()
	for b.Loop() {
		f := newForest(Base, embedded, compileURL)
		for _, d := range docs {
			r, err := f.root(files[d.kind])
			if err != nil || !accepts(r, d.n) {
				b.Fatal(d.kind, err)
			}
		}
	}
}

type runDoc struct {
	kind string
	n    *yaml.Node
}

// runDocs are a one-task fan-out's manifests.
func runDocs(t testing.TB) []runDoc {
	return []runDoc{
		{KindWorkflow, yamlDoc(t, fanout.Workflow(1))},
		{KindSkill, yamlDoc(t, "id: fan\nname: Fan\ndescription: d\nversion: 1.0.0\ninstructions: i\nagents:\n  worker: {description: w, prompt: p, max-steps: 2}\n  joiner: {description: j, prompt: p, max-steps: 2}\n")},
		{KindScript, yamlDoc(t, "agents:\n  worker: [{say: 'done {{.Task.ID}}'}]\n  joiner: [{say: joined}]\n")},
	}
}

// Rules are built on first use by whichever goroutine gets there first;
// run under -race.
func TestRulesConcurrent(t *testing.T) {
	docs := runDocs(t)
	f := newForest(Base, embedded, compileURL)
	done := make(chan bool)
	for range 4 {
		go func() {
			ok := true
			for _, d := range docs {
				r, err := f.root(files[d.kind])
				ok = ok && err == nil && accepts(r, d.n)
			}
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Error("a manifest was not accepted")
		}
	}
}

// decodeSchema leaves out the annotations of schemas and nothing else: it
// gives what encoding/json does, with annotations left out where a
// schema sits.
func TestDecodeSchema(t *testing.T) {
	var strip func(v any, in int) any
	strip = func(v any, in int) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				switch {
				case in == inSchemaMap:
					out[k] = strip(e, inSchema)
				case in != inSchema:
					out[k] = strip(e, inData)
				case slices.Contains(annotations, k) && k != "$defs":
				default:
					m, ok := schemaKeys[k]
					if !ok {
						m = inData
					}
					out[k] = strip(e, m)
				}
			}
			return out
		case []any:
			out := []any{}
			for _, e := range x {
				if in == inSchemaList {
					out = append(out, strip(e, inSchema))
				} else {
					out = append(out, strip(e, inData))
				}
			}
			return out
		}
		return v
	}
	for _, file := range files {
		data := mustEmbedded(t, file)
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeSchema(string(data))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if diff := cmp.Diff(strip(want, inSchema), got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", file, diff)
		}
	}
	for _, bad := range []string{``, `{`, `{"a" 1}`, `{"a": 1,}`, `[1 2]`, `"x`, `{"a": tru}`, `{} x`, `{"a": -}`} {
		if _, err := decodeSchema(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// An ASCII string matches a pattern's ASCII form exactly when it matches
// the pattern: every pattern in fsd's schemas and a few more, over every
// string of up to three characters from an alphabet of the kinds of
// character the classes split (and longer ids).
func TestASCIIPattern(t *testing.T) {
	patterns := []string{
		`^[\p{Lu}\p{Nd}_]+$`, `^x[\pL-]?y$`, `^[]\p{N}]+$`, `^[\p{Greek}a]$`,
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && k == "pattern" {
					patterns = append(patterns, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, file := range files {
		var doc any
		if err := json.Unmarshal(mustEmbedded(t, file), &doc); err != nil {
			t.Fatal(err)
		}
		walk(doc)
	}
	alphabet := []string{"a", "z", "A", "Z", "0", "9", "-", "_", ".", " ", "]", "^", "\\", "/", "@", "~", "\t"}
	inputs := []string{"", "weekly-report", "a-b-c", "a--b", "-a", "1.2.3", "1.2.3-rc.1+b.2", "10ms", "1h30m", "API_KEY"}
	for _, a := range alphabet {
		inputs = append(inputs, a)
		for _, b := range alphabet {
			inputs = append(inputs, a+b)
			for _, c := range alphabet[:8] {
				inputs = append(inputs, a+b+c)
			}
		}
	}
	rewritten := 0
	for _, p := range patterns {
		ascii, ok := asciiPattern(p)
		if !ok {
			continue
		}
		rewritten++
		full, fast := regexp.MustCompile(p), regexp.MustCompile(ascii)
		for _, s := range inputs {
			if full.MatchString(s) != fast.MatchString(s) {
				t.Errorf("%s as %s: %q matches one and not the other", p, ascii, s)
			}
		}
	}
	if rewritten < 5 {
		t.Errorf("rewrote %d patterns: the test does not exercise the rewrite", rewritten)
	}
	for _, p := range []string{`^[^\p{L}]$`, `\pL`, `(?i)[\p{Lu}]`, `[\p{Lo}]`, `[\p{^L}]`, `[[:alpha:]\pL]`, `^[a-z]+$`} {
		if q, ok := asciiPattern(p); ok {
			t.Errorf("%s rewritten to %s; want it left alone", p, q)
		}
	}
}

// FuzzVerdicts: on any YAML, a yes or no of the walk is the validator's
// verdict (F5, and the no that decides an if, a oneOf or a not).
func FuzzVerdicts(f *testing.F) {
	kinds := []string{KindWorkflow, KindSkill, KindScript, KindEval, KindSkillMD}
	for _, d := range runDocs(f) {
		var b strings.Builder
		enc := yaml.NewEncoder(&b)
		if err := enc.Encode(d.n); err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(slices.Index(kinds, d.kind)), b.String())
	}
	f.Add(uint8(1), "id: a-b\nname: x\ndescription: d\nversion: 1.0.0-rc.1\nsandbox: {network: [example.com]}\ntools:\n  - {name: t, description: d, run: {reply: x}}\n")
	f.Add(uint8(0), "name: w\nsandbox: off\ntools: [Bash, Bash]\nlimits: {concurrency: 0}\ntasks: []\n")
	f.Fuzz(func(t *testing.T, k uint8, src string) {
		kind := kinds[int(k)%len(kinds)]
		var doc yaml.Node
		if yaml.Unmarshal([]byte(src), &doc) != nil || len(doc.Content) == 0 {
			return
		}
		n := doc.Content[0]
		vd := rules(t, kind).check(n)
		if vd == maybe {
			return
		}
		if valid := validatorSays(t, kind, n); valid != (vd == yes) {
			t.Errorf("%s: the walk says %v, the validator valid=%v:\n%s", kind, vd == yes, valid, src)
		}
	})
}
