package artifact

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// surface is one way the model calls the readers. The conformance tests
// (goldens, bounds, resources, fuzzing) are written as compact calls and
// run through each surface: the named one must answer what the compact
// one answers, in its own tool names.
type surface struct {
	name string
	// call runs the compact call tool {"get": …} through the surface and
	// returns the answer in the compact surface's words.
	call func(s *Store, tool string, args json.RawMessage, loaded func(string) bool) (string, string, error)
}

var surfaces = []surface{
	{"compact", func(s *Store, tool string, args json.RawMessage, loaded func(string) bool) (string, string, error) {
		return s.Call(tool, args, loaded)
	}},
	{"named", callNamed},
}

// forSurfaces runs f once per surface, as a subtest.
func forSurfaces(t *testing.T, f func(t *testing.T, sf surface)) {
	for _, sf := range surfaces {
		t.Run(sf.name, func(t *testing.T) { f(t, sf) })
	}
}

// callNamed turns a compact call into calls of the named tools: the
// operation its get selects, or for a get whose answer the named surface
// splits (size), each part in order, joined as the compact answer joins
// them. A get no operation has goes to the compact tool: the named
// surface has no get to misspell.
func callNamed(s *Store, tool string, args json.RawMessage, loaded func(string) bool) (string, string, error) {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return s.Call(tool, args, loaded)
	}
	var get string
	if json.Unmarshal(m["get"], &get) != nil {
		return s.Call(tool, args, loaded)
	}
	o := findOp(tool, get)
	if o == nil {
		return s.Call(tool, args, loaded)
	}
	delete(m, "get")
	rest, _ := json.Marshal(m)
	names := []string{o.named}
	if o.named == "" {
		names = nil
		for _, p := range ops {
			if p.tool == "" {
				names = append(names, p.named)
			}
		}
	}
	var parts []string
	var skill string
	for _, n := range names {
		text, sk, err := s.Call(n, rest, loaded)
		skill = sk
		if err != nil {
			return "", skill, compactWords(err)
		}
		parts = append(parts, compactText(text))
	}
	return strings.Join(parts, ", "), skill, nil
}

var (
	namedName   = regexp.MustCompile(`artifact_[a-z_]+(:?)`)
	namedNotMD  = regexp.MustCompile(`^(artifact_md_[a-z_]+) reads markdown, and (.*) is not markdown; use artifact_head, artifact_grep or artifact_cat$`)
	compactNoMD = ToolMD + " reads markdown, and $2 is not markdown; use " + ToolRead + " (get head, grep or cat)"
)

// compactText rewrites a named tool's name as the compact surface writes
// the same operation: "artifact_read cat:" for an error's label,
// "artifact_read get=cat" in a note.
func compactText(s string) string {
	s = namedNotMD.ReplaceAllString(s, compactNoMD)
	return namedName.ReplaceAllStringFunc(s, func(w string) string {
		name, colon := strings.TrimSuffix(w, ":"), strings.HasSuffix(w, ":")
		o := findNamed(name)
		if o == nil || o.tool == "" {
			return w
		}
		if colon {
			return o.tool + " " + o.get + ":"
		}
		return o.tool + " get=" + o.get
	})
}

type wordsError struct{ msg string }

func (e wordsError) Error() string { return e.msg }

func compactWords(err error) error { return wordsError{compactText(err.Error())} }

// The named surface offers every operation as a tool of its own: fifteen
// tools, each taking handle and path and no get, and between them every
// argument of the compact surface.
func TestNamedSurface(t *testing.T) {
	want := []string{"artifact_md_headings", "artifact_md_sections", "artifact_md_frontmatter", "artifact_md_code_blocks",
		"artifact_md_links", "artifact_md_images", "artifact_md_text", "artifact_md_ast", "artifact_head", "artifact_tail",
		"artifact_cat", "artifact_grep", "artifact_byte_length", "artifact_line_count", "artifact_estimate_tokens"}
	defs := NamedTools()
	if len(defs) != len(want) {
		t.Fatalf("%d named tools, want %d", len(defs), len(want))
	}
	for i, d := range defs {
		if d.Name != want[i] {
			t.Errorf("tool %d is %s, want %s", i, d.Name, want[i])
		}
		if !IsReader(d.Name) {
			t.Errorf("IsReader(%s) = false", d.Name)
		}
		var schema struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		}
		if err := json.Unmarshal(d.Parameters, &schema); err != nil {
			t.Fatal(err)
		}
		if _, ok := schema.Properties["get"]; ok {
			t.Errorf("%s takes get", d.Name)
		}
		if schema.Required[0] != "handle" || schema.Properties["path"] == nil {
			t.Errorf("%s: required %v, properties %v", d.Name, schema.Required, schema.Properties)
		}
		if d.Description != Describe()[d.Name] {
			t.Errorf("%s: description is not Describe's", d.Name)
		}
	}
	s := NewStore(seeded(1))
	h := mustSpool(t, s, "weekly", "1.0.0", body, "", nil)
	_, _, err := s.Call("artifact_head", json.RawMessage(`{"handle":"`+h+`","get":"head"}`), allLoaded)
	if err == nil || err.Error() != `artifact_head: unknown argument "get"; arguments of artifact_head are: handle, lines, path` {
		t.Errorf("a named tool given get: %v", err)
	}
}
