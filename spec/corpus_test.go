package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/internal/golden"
)

// render is what `fsd validate --format text` prints for diags, with the
// temporary folder (if any) replaced by $TMP so goldens are stable.
func render(diags diag.List, tmp string) string {
	var b strings.Builder
	for _, d := range diags {
		s := d.String()
		if tmp != "" {
			s = strings.ReplaceAll(s, tmp, "$TMP")
		}
		b.WriteString(s)
		b.WriteByte('\n')
	}
	return b.String()
}

// checkPositions asserts the corpus promise: at least one error, and every
// diagnostic points at a real line and column.
func checkPositions(t *testing.T, diags diag.List) {
	t.Helper()
	if len(diags.Errors(true)) == 0 {
		t.Errorf("no diagnostics")
	}
	for _, d := range diags {
		if d.Pos.File == "" || d.Pos.Line < 1 || d.Pos.Col < 1 {
			t.Errorf("diagnostic without file:line:col: %q", d.String())
		}
	}
}

// TestBadCorpus validates every entry of testdata/bad (a file, or a folder
// holding a small project) and compares the diagnostics with NAME.golden.
func TestBadCorpus(t *testing.T) {
	entries, err := os.ReadDir("testdata/bad")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".golden") {
			continue
		}
		n++
		name, _, _ := strings.Cut(e.Name(), ".")
		path := filepath.Join("testdata", "bad", e.Name())
		t.Run(name, func(t *testing.T) {
			diags := ValidatePaths([]string{path}, false)
			checkPositions(t, diags)
			golden.CheckString(t, filepath.Join("testdata", "bad", name+".golden"), render(diags, ""))
		})
	}
	if n < 30 {
		t.Errorf("the bad-input corpus has %d entries, want at least 30", n)
	}
}

// TestGeneratedCorpus covers inputs git cannot hold well: symlinks that
// leave a skill's folder, and a file over MaxFileSize. They are built in a
// temporary folder at run time.
func TestGeneratedCorpus(t *testing.T) {
	write := func(t *testing.T, path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	symlink := func(t *testing.T, target, link string) {
		t.Helper()
		if err := os.Symlink(target, link); err != nil {
			t.Skipf("symlinks not supported here: %v", err)
		}
	}
	cases := []struct {
		name  string
		build func(t *testing.T, dir string) string // returns the path to validate
	}{
		{"symlink-instructions", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, "secret.md"), "# not yours\n")
			skill := filepath.Join(dir, "skill")
			write(t, filepath.Join(skill, "escape.skill.yaml"), "id: escape\nname: Escape\ndescription: Follows a symlink out.\nversion: 1.0.0\ninstructions-file: notes.md\n")
			symlink(t, filepath.Join("..", "secret.md"), filepath.Join(skill, "notes.md"))
			return filepath.Join(skill, "escape.skill.yaml")
		}},
		{"symlink-resource", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, "outside", "id_rsa"), "not a resource\n")
			skill := filepath.Join(dir, "symlink-resource")
			write(t, filepath.Join(skill, "SKILL.md"), "---\nname: symlink-resource\ndescription: Has a resource that leads out.\n---\n# Body\n")
			write(t, filepath.Join(skill, "ok.md"), "fine\n")
			symlink(t, filepath.Join("..", "outside", "id_rsa"), filepath.Join(skill, "key"))
			symlink(t, "ok.md", filepath.Join(skill, "alias.md"))
			return skill
		}},
		{"too-big", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "big.skill.yaml")
			body := "id: big\nname: Big\ndescription: Too big.\nversion: 1.0.0\ninstructions: |\n" +
				strings.Repeat("  "+strings.Repeat("x", 78)+"\n", MaxFileSize/80+10)
			write(t, path, body)
			return path
		}},
		{"too-big-instructions", func(t *testing.T, dir string) string {
			skill := filepath.Join(dir, "skill")
			write(t, filepath.Join(skill, "huge.md"), strings.Repeat("# heading\n", MaxFileSize/10+1))
			write(t, filepath.Join(skill, "huge.skill.yaml"), "id: huge\nname: Huge\ndescription: Huge instructions.\nversion: 1.0.0\ninstructions-file: huge.md\n")
			return filepath.Join(skill, "huge.skill.yaml")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tc.build(t, dir)
			diags := ValidatePaths([]string{path}, false)
			checkPositions(t, diags)
			golden.CheckString(t, filepath.Join("testdata", "generated", tc.name+".golden"), render(diags, dir))
		})
	}
}

// TestStrict: unknown SKILL.md keys are warnings, errors with strict.
func TestStrict(t *testing.T) {
	path := filepath.Join("testdata", "bad", "skillmd-foreign")
	for _, strict := range []bool{false, true} {
		diags := ValidatePaths([]string{path}, strict)
		var warn int
		for _, d := range diags {
			if d.Severity == diag.Warning {
				warn++
			}
		}
		if strict && warn != 0 {
			t.Errorf("strict: %d warnings left, want all errors", warn)
		}
		if !strict && warn != 3 {
			t.Errorf("not strict: %d warnings, want 3 (triggers, permissions, dependencies; not Claude Code's model, user-invocable, hooks)", warn)
		}
	}
}
