package output

import (
	"reflect"
	"strings"
	"testing"
)

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  any
		path []string
		msg  string
	}{
		{"bad type", map[string]any{"type": "strin"}, []string{"type"}, "value must be one of"},
		{"bad regex", map[string]any{"properties": map[string]any{"a": map[string]any{"pattern": "(["}}}, []string{"properties", "a", "pattern"}, "not valid regex"},
		{"remote ref", map[string]any{"$ref": "https://example.com/s.json"}, []string{"$ref"}, "cannot refer to https://example.com/s.json"},
		{"file ref", map[string]any{"$ref": "other.json"}, []string{"$ref"}, "cannot refer to other.json"},
		{"dangling ref", map[string]any{"$ref": "#/$defs/x"}, []string{"$ref"}, `$ref "#/$defs/x" points at nothing`},
		{"nested file ref", map[string]any{"type": "object", "properties": map[string]any{
			"a": map[string]any{"type": "string"},
			"b": map[string]any{"prefixItems": []any{map[string]any{"$ref": "./defs.json#/x"}}}}},
			[]string{"properties", "b", "prefixItems", "0", "$ref"}, "cannot refer to"},
		{"nested dangling ref", map[string]any{"$defs": map[string]any{"y": true}, "properties": map[string]any{
			"a": map[string]any{"$ref": "#/$defs/y"}, "b": map[string]any{"$ref": "#/$defs/x"}}},
			[]string{"properties", "b", "$ref"}, `$ref "#/$defs/x" points at nothing`},
		{"wrong keyword type", map[string]any{"properties": map[string]any{"a": map[string]any{"minimum": "x"}}}, []string{"properties", "a", "minimum"}, "want number"},
		{"not a schema", "str", nil, "is an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile("agent", tc.doc)
			ce, ok := err.(*CompileError)
			if !ok {
				t.Fatalf("err = %#v", err)
			}
			if !reflect.DeepEqual(ce.Path, tc.path) || !strings.Contains(ce.Msg, tc.msg) {
				t.Errorf("got %v %q, want %v containing %q", ce.Path, ce.Msg, tc.path, tc.msg)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	s, err := Compile("x", map[string]any{"type": "object", "required": []any{"total"},
		"properties": map[string]any{"total": map[string]any{"type": "integer"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		answer, value, problem string
	}{
		{`{"total":3}`, `{"total":3}`, ""},
		{" {\n  \"total\": 3\n}\n", `{"total":3}`, ""},
		{"```json\n{\"total\": 3}\n```", `{"total":3}`, ""},
		{"```\n{\"total\": 3}\n```", `{"total":3}`, ""},
		{`{"total":12345678901234567890}`, `{"total":12345678901234567890}`, ""},
		{"```yaml\ntotal: 3\n```", "", "not JSON"},
		{"```json\n{}\n```\n```json\n{}\n```", "", "not JSON"},
		{`{"total":"3"}`, "", "at /total: got string, want integer"},
		{`{}`, "", "at /: missing property 'total'"},
		{`Sure! {"total":3}`, "", "not JSON"},
		{`{"total":3} done`, "", "text after its JSON value"},
		{`{"total":3}{"total":4}`, "", "text after its JSON value"},
		{"", "", "empty"},
	} {
		v, problems := s.Check(tc.answer)
		if string(v) != tc.value {
			t.Errorf("Check(%q) value = %s, want %s", tc.answer, v, tc.value)
		}
		if got := strings.Join(problems, "\n"); tc.problem == "" && got != "" || !strings.Contains(got, tc.problem) {
			t.Errorf("Check(%q) problems = %q, want %q", tc.answer, got, tc.problem)
		}
	}
}

func TestViolationsBounded(t *testing.T) {
	props := map[string]any{}
	req := []any{}
	for i := range 30 {
		k := string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		props[k] = map[string]any{"type": "string"}
		req = append(req, k)
	}
	s, err := Compile("x", map[string]any{"type": "object", "required": req, "properties": props})
	if err != nil {
		t.Fatal(err)
	}
	answer := "{"
	for i := range 30 {
		if i > 0 {
			answer += ","
		}
		answer += `"` + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + `":1`
	}
	_, problems := s.Check(answer + "}")
	if len(problems) != MaxViolations+1 || !strings.HasPrefix(problems[MaxViolations], "and 10 more") {
		t.Errorf("%d problems, last %q", len(problems), problems[len(problems)-1])
	}
}

// A schema is compiled once per name and JSON, however often it is
// asked for (each task of an agent asks), and the schemas kept are
// bounded.
func TestCompileOnce(t *testing.T) {
	forget()
	doc := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}}
	a, err := Compile("agent", doc)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := Compile("agent", map[string]any{"properties": map[string]any{"n": map[string]any{"type": "integer"}}, "type": "object"}); b != a {
		t.Error("the same schema was compiled twice")
	}
	if c, _ := Compile("agent", map[string]any{"type": "array"}); c == a {
		t.Error("another schema got the first one's compilation")
	}
	if _, err := Compile("agent", map[string]any{"type": "strin"}); err == nil {
		t.Error("a bad schema compiled")
	} else if _, err2 := Compile("agent", map[string]any{"type": "strin"}); err2 != err {
		t.Error("a bad schema was compiled twice")
	}
	for i := range maxCompiled + 10 {
		if _, err := Compile("agent", map[string]any{"maxLength": i}); err != nil {
			t.Fatal(err)
		}
	}
	compiled.mu.Lock()
	n := len(compiled.m)
	compiled.mu.Unlock()
	if n > maxCompiled {
		t.Errorf("%d schemas kept, want at most %d", n, maxCompiled)
	}
}
