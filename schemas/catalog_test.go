package schemas_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/schemas"
	"github.com/fsdrun/fsd/spec"
)

// schemaFor names the schema a manifest file is checked against by its
// name, or "" for a file no modeline serves (SKILL.md's frontmatter is
// markdown to yaml-language-server).
func schemaFor(name string) string {
	switch {
	case strings.HasSuffix(name, ".md"):
		return ""
	case spec.IsSkillFile(name):
		return "skill.schema.json"
	case spec.IsWorkflowFile(name):
		return "workflow.schema.json"
	case spec.IsScriptFile(name):
		return "script.schema.json"
	case spec.IsEvalFile(name):
		return "eval.schema.json"
	}
	return ""
}

// Every schema's $id is where schemas.Base says it is published.
func TestSchemaIDsUseBase(t *testing.T) {
	for name, data := range map[string][]byte{
		"skill.schema.json": schemas.Skill(), "skill-md.schema.json": schemas.SkillMD(),
		"workflow.schema.json": schemas.Workflow(), "script.schema.json": schemas.Script(),
		"eval.schema.json": schemas.Eval(),
	} {
		var doc struct {
			ID string `json:"$id"`
		}
		if err := json.Unmarshal(data, &doc); err != nil || doc.ID != schemas.Base+name {
			t.Errorf("%s: $id %q, want %q (%v)", name, doc.ID, schemas.Base+name, err)
		}
	}
}

// catalog.json, the entry for SchemaStore, points each kind of manifest
// at its published schema, and its file patterns claim exactly the files
// fsd reads as that kind (the bare names skill.yaml and workflow.yaml are
// left out: too common for a catalog every editor consults).
func TestCatalog(t *testing.T) {
	data, err := os.ReadFile("catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	var catalog struct {
		Schema  string `json:"$schema"`
		Version int
		Schemas []struct {
			Name, Description, URL string
			FileMatch              []string
		}
	}
	if err := json.Unmarshal(data, &catalog); err != nil {
		t.Fatal(err)
	}
	if catalog.Schema != "https://json.schemastore.org/schema-catalog.json" || catalog.Version != 1 || len(catalog.Schemas) != 4 {
		t.Fatalf("catalog.json: $schema %q, version %d, %d entries; want SchemaStore's catalog form with 4", catalog.Schema, catalog.Version, len(catalog.Schemas))
	}
	samples := []string{"a.skill.yaml", "a.skill.yml", "b.workflow.yaml", "b.workflow.yml", "c.script.yaml", "c.script.yml", "d.eval.yaml", "d.eval.yml",
		"skill.yaml", "workflow.yaml", "SKILL.md", "docker-compose.yaml", "a.skill.yaml.bak"}
	for _, e := range catalog.Schemas {
		name, ok := strings.CutPrefix(e.URL, schemas.Base)
		if !ok {
			t.Errorf("%s: url %s is not under %s", e.Name, e.URL, schemas.Base)
		}
		if e.Name == "" || e.Description == "" {
			t.Errorf("%s: a catalog entry needs a name and a description", e.URL)
		}
		for _, s := range samples {
			matched := false
			for _, p := range e.FileMatch {
				if m, err := path.Match(p, s); err != nil {
					t.Fatalf("%s: fileMatch %q: %v", e.Name, p, err)
				} else if m {
					matched = true
				}
			}
			want := schemaFor(s) == name && strings.Contains(strings.TrimSuffix(s, filepath.Ext(s)), ".")
			if matched != want {
				t.Errorf("%s: fileMatch %v matches %s: %v, want %v", e.Name, e.FileMatch, s, matched, want)
			}
		}
	}
}

// Modelines in the examples, in the templates fsd init writes and in the
// docs name the schema of their file's kind, at schemas.Base or as a path
// to the file in schemas/.
func TestModelines(t *testing.T) {
	const prefix = "# yaml-language-server: $schema="
	var files []string
	for _, root := range []string{"../examples", "../scaffold/templates"} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && schemaFor(p) != "" {
				files = append(files, p)
			}
			return err
		})
	}
	docs, _ := filepath.Glob("../docs/*.md")
	files = append(append(files, "../README.md"), docs...)
	found := 0
	for _, f := range files {
		file, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(file)
		for n := 1; sc.Scan(); n++ {
			url, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), prefix)
			if !ok {
				continue
			}
			found++
			name, published := strings.CutPrefix(url, schemas.Base)
			if !published {
				// A path from the file to the schema in this repository.
				rel := filepath.Join(filepath.Dir(f), filepath.FromSlash(url))
				if filepath.Dir(rel) != filepath.Clean("../schemas") {
					t.Errorf("%s:%d: %s is neither under %s nor a path to schemas/", f, n, url, schemas.Base)
					continue
				}
				name = filepath.Base(rel)
			}
			if want := schemaFor(f); want != "" && name != want {
				t.Errorf("%s:%d: modeline names %s, want %s", f, n, name, want)
			}
			if _, err := os.Stat(filepath.Join("..", "schemas", name)); err != nil {
				t.Errorf("%s:%d: %s: no such schema in schemas/", f, n, url)
			}
		}
		file.Close()
	}
	if found < 10 {
		t.Errorf("only %d modelines found", found)
	}
}
