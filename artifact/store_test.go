package artifact

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

const body = "# Title\n\n## Steps\n\nDo the thing.\n"

func mustSpool(t testing.TB, s *Store, id, version, text, dir string, res []string) string {
	t.Helper()
	h, err := s.Spool(id, version, []byte(text), dir, res)
	if err != nil {
		t.Fatalf("Spool(%s, %s): %v", id, version, err)
	}
	return h
}

func callText(t testing.TB, s *Store, tool, args string) (string, error) {
	t.Helper()
	text, _, err := s.Call(tool, json.RawMessage(args), allLoaded)
	return text, err
}

// A body is spooled and parsed once per (skill id, version) (H1).
func TestSpoolOncePerVersion(t *testing.T) {
	s := NewStore(seeded(1))
	h1 := mustSpool(t, s, "weekly", "1.0.0", body, "", nil)
	// Same key, different body: the first body stands, nothing is parsed.
	h2 := mustSpool(t, s, "weekly", "1.0.0", "# Other\n", "", nil)
	if h1 != h2 {
		t.Fatalf("second Spool of the same version gave handle %s, want %s", h2, h1)
	}
	got, err := callText(t, s, "artifact_md", fmt.Sprintf(`{"get":"headings","handle":%q}`, h1))
	if err != nil || !strings.Contains(got, "Title") {
		t.Errorf("headings after respool = %q, %v; want the first body's", got, err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := s.Spool("weekly", "1.0.0", []byte(body), "", nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Errorf("a repeated Spool allocates %v times; it must not copy or parse", allocs)
	}
	h3 := mustSpool(t, s, "weekly", "1.1.0", body, "", nil)
	if h3 == h1 {
		t.Errorf("a new version got the old handle %s", h1)
	}
	for h, want := range map[string]string{h1: "1.0.0", h3: "1.1.0"} {
		id, v, ok := s.SkillOf(h)
		if !ok || id != "weekly" || v != want {
			t.Errorf("SkillOf(%s) = %s, %s, %v; want weekly, %s, true", h, id, v, ok, want)
		}
	}
	if _, _, ok := s.SkillOf("h_0123"); ok {
		t.Error("SkillOf of an unknown handle says ok")
	}
}

// A reader call works only for a handle of a loaded skill (H2).
func TestCallNeedsLoadedSkill(t *testing.T) {
	s := NewStore(seeded(1))
	h := mustSpool(t, s, "weekly", "1.0.0", body, "", nil)
	other := mustSpool(t, s, "brand", "1.0.0", body, "", nil)
	loaded := func(id string) bool { return id == "brand" }

	text, skill, err := s.Call(ToolRead, json.RawMessage(fmt.Sprintf(`{"get":"head","handle":%q}`, other)), loaded)
	if err != nil || skill != "brand" || text == "" {
		t.Fatalf("loaded skill: got %q, %q, %v", text, skill, err)
	}
	wantErr := fmt.Sprintf("handle %q does not name an artifact of a loaded skill; read_skill it again", h)
	for name, handle := range map[string]string{"unloaded": h, "unknown": "h_00000000000000000000000000000000"} {
		t.Run(name, func(t *testing.T) {
			text, skill, err := s.Call(ToolRead, json.RawMessage(fmt.Sprintf(`{"get":"head","handle":%q}`, handle)), loaded)
			if err == nil || text != "" || skill != "" {
				t.Fatalf("got %q, %q, %v; want an error", text, skill, err)
			}
			if name == "unloaded" && err.Error() != wantErr {
				t.Errorf("error = %q, want %q", err, wantErr)
			}
			if !strings.Contains(err.Error(), "read_skill it again") {
				t.Errorf("error %q does not tell the model what to do", err)
			}
		})
	}
	if _, _, err := s.Call(ToolRead, json.RawMessage(fmt.Sprintf(`{"get":"head","handle":%q}`, other)), nil); err == nil {
		t.Error("a nil loaded func must load nothing")
	}
}

func TestCallBadArguments(t *testing.T) {
	s := NewStore(seeded(1))
	h := mustSpool(t, s, "weekly", "1.0.0", body, "", nil)
	tests := []struct {
		tool, args, want string
	}{
		{"read_file", `{}`, `unknown reader tool "read_file"; the readers are artifact_md and artifact_read`},
		{"artifact_read", `[1,2]`, "artifact_read: arguments must be a JSON object"},
		{"artifact_read", `{"handle": "H"}`, `artifact_read: argument "get" is required: one of head, tail, cat, grep, size`},
		{"artifact_read", ``, `artifact_read: argument "get" is required: one of head, tail, cat, grep, size`},
		{"artifact_read", `{"get": 3, "handle": "H"}`, `artifact_read: argument "get" must be a string: one of head, tail, cat, grep, size`},
		{"artifact_read", `{"get": "section", "handle": "H"}`, `artifact_read: get "section" is a get of artifact_md; artifact_read gets head, tail, cat, grep, size`},
		{"artifact_md", `{"get": "lines", "handle": "H"}`, `artifact_md: get "lines" is not one of headings, section, frontmatter, code, links, images, text, ast`},
		{"artifact_read", `{"get": "head", "handle": 7}`, `artifact_read head: argument "handle" must be a string, not number`},
		{"artifact_read", `{"get": "head"}`, `artifact_read head: argument "handle" is required: the h_… handle of a loaded skill or a kept result`},
		{"artifact_read", `{"get": "head", "handle": "H", "line": 3}`, `artifact_read head: unknown argument "line"; arguments of get "head" are: get, handle, lines, path`},
		{"artifact_read", `{"get": "head", "handle": "H", "offset": 3}`, `artifact_read head: unknown argument "offset"; arguments of get "head" are: get, handle, lines, path`},
		{"artifact_read", `{"get": "head", "handle": "H", "lines": "ten"}`, `artifact_read head: argument "lines" must be an integer, not string`},
		{"artifact_read", `{"get": "head", "handle": "H", "lines": 0}`, `artifact_read head: lines must be between 1 and 1000, not 0`},
		{"artifact_md", `{"get": "section", "handle": "H"}`, `artifact_md section: argument "heading" is required`},
		{"artifact_md", `{"get": "section", "handle": "H", "heading": " > "}`, `artifact_md section: heading is empty; name a heading or a path like "Setup > Install"`},
		{"artifact_read", `{"get": "grep", "handle": "H", "pattern": "("}`, "artifact_read grep: invalid pattern: error parsing regexp: missing closing ): `(`"},
		{"artifact_read", `{"get": "grep", "handle": "H", "pattern": "a", "context": 11}`, "artifact_read grep: context must be between 0 and 10, not 11"},
		{"artifact_read", `{"get": "cat", "handle": "H", "offset": -1}`, "artifact_read cat: offset -1 is outside the artifact (33 bytes)"},
		{"artifact_read", `{"get": "cat", "handle": "H", "limit": 100000}`, "artifact_read cat: limit must be between 1 and 16384, not 100000"},
		{"artifact_md", `{"get": "ast", "handle": "H", "depth": 9}`, "artifact_md ast: depth must be between 1 and 8, not 9"},
		{"artifact_md", `{"get": "text", "handle": "H", "offset": 1000}`, "artifact_md text: offset 1000 is outside the plain text (28 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.tool+tt.args, func(t *testing.T) {
			_, err := callText(t, s, tt.tool, strings.ReplaceAll(tt.args, `"H"`, fmt.Sprintf("%q", h)))
			if err == nil {
				t.Fatalf("no error; want %q", tt.want)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToolsSchemas(t *testing.T) {
	tools := Tools()
	if len(tools) != 2 {
		t.Fatalf("%d reader tools, want artifact_md and artifact_read", len(tools))
	}
	seen := map[string]bool{}
	for _, td := range tools {
		if seen[td.Name] || !IsReader(td.Name) || td.Description == "" {
			t.Errorf("tool %q: duplicate, not a reader, or undocumented", td.Name)
		}
		seen[td.Name] = true
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(td.Parameters)))
		if err != nil {
			t.Fatalf("%s: schema is not JSON: %v", td.Name, err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(td.Name+".json", doc); err != nil {
			t.Fatal(err)
		}
		sch, err := c.Compile(td.Name + ".json")
		if err != nil {
			t.Fatalf("%s: schema does not compile: %v", td.Name, err)
		}
		if err := sch.Validate(map[string]any{}); err == nil {
			t.Errorf("%s: schema accepts arguments without a handle", td.Name)
		}
	}
	if IsReader("read_skill") {
		t.Error("IsReader(read_skill) = true")
	}
}

func TestPointer(t *testing.T) {
	s := NewStore(seeded(1))
	h := mustSpool(t, s, "weekly", "1.0.0", body, t.TempDir(), []string{"references/api.md", "b.txt"})
	want := "Skill weekly 1.0.0: instructions are artifact " + h + " (5 lines). Read them with artifact_md get=headings, then get=section, or artifact_read get=grep. Resources (pass as path): b.txt, references/api.md."
	if diff := cmp.Diff(want, s.Pointer(h)); diff != "" {
		t.Errorf("Pointer (-want +got):\n%s", diff)
	}
	if got := s.Pointer("h_nope"); got != "" {
		t.Errorf("Pointer of an unknown handle = %q, want empty", got)
	}
}

// Readers run from many workers while the host spools (run with -race).
func TestConcurrentUse(t *testing.T) {
	s := NewStore(nil)
	h := mustSpool(t, s, "weekly", "1.0.0", body, "", nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, err := s.Spool(fmt.Sprintf("s%d", i), "1.0.0", []byte(body), "", nil); err != nil {
				t.Error(err)
			}
			for _, o := range ops {
				if o.tool == "" {
					continue // a part of a compact get, which callNamed calls
				}
				args := fmt.Sprintf(`{"get":%q,"handle":%q}`, o.get, h)
				switch o.get {
				case "section":
					args = fmt.Sprintf(`{"get":"section","handle":%q,"heading":"Steps"}`, h)
				case "grep":
					args = fmt.Sprintf(`{"get":"grep","handle":%q,"pattern":"thing"}`, h)
				}
				for _, sf := range surfaces {
					if _, _, err := sf.call(s, o.tool, json.RawMessage(args), allLoaded); err != nil {
						t.Errorf("%s: %s %s: %v", sf.name, o.tool, o.get, err)
					}
				}
			}
		})
	}
	wg.Wait()
}

// Stores share one markdown parser: a worker makes a store per remote
// task, and building goldmark's parser there was a quarter of a short
// task's setup (U10). Stores parsing at once (go test -race) each get
// their own body's outline.
func TestStoresShareOneParser(t *testing.T) {
	rnd := seeded(1)
	if n := testing.AllocsPerRun(20, func() { NewStore(rnd) }); n > 4 {
		t.Errorf("NewStore allocates %v times; it must not build a markdown parser", n)
	}
	if a, b := NewStore(rnd), NewStore(rnd); a.parser != b.parser {
		t.Error("two stores have parsers of their own")
	}
	var wg sync.WaitGroup
	got := make([]string, 8)
	errs := make([]error, 8)
	for i := range got {
		wg.Go(func() {
			s := NewStore(seeded(uint64(i)))
			text := fmt.Sprintf("# Store %d\n\n| a | b |\n|---|---|\n| ~~x~~ | y |\n\n- [x] done %d\n", i, i)
			h, err := s.Spool("weekly", "1.0.0", []byte(text), "", nil)
			if err != nil {
				errs[i] = err
				return
			}
			got[i], errs[i] = callText(t, s, "artifact_md", fmt.Sprintf(`{"get":"headings","handle":%q}`, h))
		})
	}
	wg.Wait()
	for i := range got {
		if want := fmt.Sprintf("Store %d", i); errs[i] != nil || !strings.Contains(got[i], want) {
			t.Errorf("store %d's headings = %q, %v; want %q", i, got[i], errs[i], want)
		}
	}
}
