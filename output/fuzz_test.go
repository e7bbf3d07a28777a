package output

import (
	"encoding/json"
	"testing"
)

// FuzzCheck feeds Check what a model may answer: it never panics, and a
// value it accepts is compact JSON valid against the schema.
func FuzzCheck(f *testing.F) {
	s, err := Compile("x", map[string]any{"type": "object", "required": []any{"total"},
		"properties": map[string]any{"total": map[string]any{"type": "integer"}, "items": map[string]any{"type": "array"}}})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{`{"total":3}`, "```json\n{\"total\":3}\n```", "```\n```", "```", `{"total":1e400}`, `{"total":3} x`, "\x00", `[`, `{"total":3,"items":[1,{"a":null}]}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		v, problems := s.Check(answer)
		if v == nil && len(problems) == 0 {
			t.Fatalf("Check(%q): neither a value nor problems", answer)
		}
		if v != nil {
			if len(problems) != 0 || !json.Valid(v) {
				t.Fatalf("Check(%q) = %s, %v", answer, v, problems)
			}
			if _, again := s.Check(string(v)); again != nil {
				t.Fatalf("the accepted value %s fails its own check: %v", v, again)
			}
		}
	})
}

// BenchmarkCheck is the cost of checking one typed answer.
func BenchmarkCheck(b *testing.B) {
	s, err := Compile("x", map[string]any{"type": "object", "required": []any{"total", "items"},
		"properties": map[string]any{"total": map[string]any{"type": "integer", "minimum": 0},
			"items": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}})
	if err != nil {
		b.Fatal(err)
	}
	answer := "```json\n{\"total\": 3, \"items\": [\"alpha\", \"beta\", \"gamma\"]}\n```"
	b.ReportAllocs()
	for b.Loop() {
		if v, p := s.Check(answer); v == nil {
			b.Fatal(p)
		}
	}
}

// BenchmarkCompile is the cost of compiling a schema the first time,
// and of asking for it again, as each task of the agent does.
func BenchmarkCompile(b *testing.B) {
	doc := map[string]any{"type": "object", "required": []any{"total", "items"},
		"properties": map[string]any{"total": map[string]any{"type": "integer", "minimum": 0},
			"items": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}
	for _, again := range []bool{false, true} {
		b.Run(map[bool]string{false: "first", true: "again"}[again], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !again {
					forget()
				}
				if _, err := Compile("x", doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// forget drops the compiled schemas, as a new process starts without any.
func forget() {
	compiled.mu.Lock()
	defer compiled.mu.Unlock()
	clear(compiled.m)
}
