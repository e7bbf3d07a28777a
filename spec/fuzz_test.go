package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/diag"
)

// FuzzLoad feeds arbitrary bytes to the loaders (skill YAML, SKILL.md,
// workflow, scripted-model script). They must not panic, and every diagnostic must
// carry a file, line and column. The seed corpus is every file of the
// bad-input corpus and the examples.
func FuzzLoad(f *testing.F) {
	seeds := 0
	for _, root := range []string{filepath.Join("testdata", "bad"), filepath.Join("..", "examples")} {
		_ = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() || strings.HasSuffix(p, ".golden") {
				return nil
			}
			if data, err := os.ReadFile(p); err == nil && len(data) <= 1<<16 {
				f.Add(data)
				seeds++
			}
			return nil
		})
	}
	if seeds == 0 {
		f.Fatal("no seeds found")
	}
	dir := f.TempDir()
	skillDir := filepath.Join(dir, "fuzz-skill")
	if err := os.MkdirAll(skillDir, 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(what string, diags diag.List) {
			for _, d := range diags {
				if d.Pos.File == "" || d.Pos.Line < 1 || d.Pos.Col < 1 {
					t.Fatalf("%s: diagnostic without file:line:col: %s", what, d)
				}
			}
		}
		_, d1 := loadSkill(filepath.Join(dir, "fuzz.skill.yaml"), data)
		check("skill", d1)
		_, d2 := loadSkill(filepath.Join(skillDir, "SKILL.md"), data)
		check("SKILL.md", d2)
		_, d3 := loadWorkflow(filepath.Join(dir, "fuzz.workflow.yaml"), data)
		check("workflow", d3)
		check("script", validateScript(filepath.Join(dir, "fuzz.script.yaml"), data))
		// An eval suite and skill-creator's JSON are read from a file.
		ev := filepath.Join(dir, "fuzz.eval.yaml")
		if err := os.WriteFile(ev, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, d4 := LoadEval(ev)
		check("eval", d4)
		_, d5 := LoadTriggerSet(ev, "s")
		check("trigger set", d5)
		_, d6 := LoadSkillCreatorEvals(ev)
		check("evals.json", d6)
	})
}
