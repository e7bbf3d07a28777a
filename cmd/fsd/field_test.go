package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/golden"
)

// fieldSkills lists the skill folders of testdata/field/skills: SKILL.md
// folders in the shapes people publish (Claude Code keys, allowed-tools as
// a string with patterns and as a list, scripts/ and reference files,
// nested groups, names in other scripts, a long description, a name that
// does not match its folder, a BOM and CRLF, another product's keys, fsd's
// own keys) and one whose frontmatter does not parse.
func fieldSkills(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join("testdata", "field", "skills"), func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Name() == "SKILL.md" {
			out = append(out, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestFieldCorpusValidate: `fsd validate FOLDER` of each skill, exit code,
// stdout and stderr, against testdata/field/golden/NAME.golden.
func TestFieldCorpusValidate(t *testing.T) {
	dirs := fieldSkills(t)
	if len(dirs) < 15 {
		t.Fatalf("the corpus has %d SKILL.md folders, want at least 15", len(dirs))
	}
	for _, dir := range dirs {
		rel, _ := filepath.Rel(filepath.Join("testdata", "field", "skills"), dir)
		name := strings.ReplaceAll(filepath.ToSlash(rel), "/", "--")
		t.Run(name, func(t *testing.T) {
			code, out, errs := runCLI(t, "validate", dir)
			got := fmt.Sprintf("$ fsd validate %s\nexit %d\n--- stdout\n%s--- stderr\n%s", filepath.ToSlash(dir), code, out, errs)
			golden.CheckString(t, filepath.Join("testdata", "field", "golden", name+".golden"), got)
			if strings.HasPrefix(name, "broken") != (code == exitProblems) {
				t.Errorf("exit %d", code)
			}
		})
	}
}

// TestFieldCorpusRun: `fsd run` over the whole folder, the broken skill in
// it, loads the rest: the host reads an Agent Skills folder and runs its
// script as the instructions say, reads a skill named in Chinese and uses
// an fsd tool; the broken one is skipped with one warning and an event.
func TestFieldCorpusRun(t *testing.T) {
	wf := filepath.Join("testdata", "field", "field.workflow.yaml")
	code, out, errs := fsd(t, "run", wf, "--events", "json", "--runs-dir", filepath.Join(t.TempDir(), "runs"))
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if n := strings.Count(errs, "warning: "); n != 1 || !strings.Contains(errs, `warning: skill "broken-frontmatter" skipped: `) {
		t.Errorf("want exactly one warning, for the broken skill:\n%s", errs)
	}
	var skipped []string
	results := map[string][]string{}
	var answer string
	for _, e := range events(t, out) {
		switch e.Type {
		case event.SkillSkipped:
			skipped = append(skipped, e.Skill)
		case event.ToolResult:
			if e.Error {
				t.Errorf("%s failed: %s", e.Tool, e.Result)
			}
			results[e.Tool] = append(results[e.Tool], e.Result)
		case event.RunFinished:
			answer = e.Answer
		}
	}
	if len(skipped) != 1 || skipped[0] != "broken-frontmatter" {
		t.Errorf("skipped: %v", skipped)
	}
	if got := strings.Join(results["run_skill_script"], ""); got != "outline of: standup\n- decision: ship on Friday\n" {
		t.Errorf("run_skill_script: %q", got)
	}
	if len(results["read_skill"]) != 3 || !strings.Contains(results["read_skill"][1], `"id":"技能"`) {
		t.Errorf("read_skill: %q", results["read_skill"])
	}
	if answer != "Recap: Hello, Grace!" {
		t.Errorf("answer %q", answer)
	}
}

// TestRunStrict: the field corpus has a broken skill; `fsd run --strict`
// fails with exit 1 and says which skill and why, before any model call,
// and the record says failed.
func TestRunStrict(t *testing.T) {
	t.Parallel()
	wf := filepath.Join("testdata", "field", "field.workflow.yaml")
	runs := filepath.Join(t.TempDir(), "runs")
	code, out, errs := fsd(t, "run", wf, "--strict", "--runs-dir", runs)
	if code != exitProblems || out != "" {
		t.Fatalf("exit %d, stdout %q\n%s", code, out, errs)
	}
	if !strings.Contains(errs, `fsd: run failed: strict: skill "broken-frontmatter" was skipped: `) {
		t.Errorf("stderr:\n%s", errs)
	}
	entries, err := os.ReadDir(runs)
	if err != nil || len(entries) != 1 {
		t.Fatalf("runs: %v %v", entries, err)
	}
	b, err := os.ReadFile(filepath.Join(runs, entries[0].Name(), "run.json"))
	if err != nil || !strings.Contains(string(b), `"status": "failed"`) && !strings.Contains(string(b), `"status":"failed"`) {
		t.Errorf("run.json: %s %v", b, err)
	}
}
