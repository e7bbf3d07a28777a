package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fsdrun/fsd/diag"
)

// skill-creator's files parse as its references/schemas.md and SKILL.md
// describe them (fixtures written from that description): a trigger set
// is a list of {query, should_trigger}; an evals.json's evals become
// cases named SKILL-ID whose expectations (or assertions, as SKILL.md
// calls them) are judge rubrics, expected_output the rubric of an eval
// without any, files relative to the skill's folder.
func TestSkillCreatorFormats(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "trigger.json"), `[
  {"query": "ok so my boss sent me Q4 sales final FINAL v2.xlsx", "should_trigger": true},
  {"query": "write a fibonacci function", "should_trigger": false, "note": "kept by other tools"}
]`)
	got, diags := LoadTriggerSet(filepath.Join(dir, "trigger.json"), "xlsx")
	if diags != nil {
		t.Fatal(diags)
	}
	want := []TriggerCase{
		{Skill: "xlsx", Query: "ok so my boss sent me Q4 sales final FINAL v2.xlsx", ShouldTrigger: true},
		{Skill: "xlsx", Query: "write a fibonacci function"},
	}
	if d := cmp.Diff(want, got, cmpopts.IgnoreFields(TriggerCase{}, "Pos", "SkillPos")); d != "" {
		t.Errorf("trigger set (-want +got):\n%s", d)
	}
	if got[1].Pos.Line != 3 || got[1].Pos.Col != 3 {
		t.Errorf("second case at %s, want line 3 col 3", got[1].Pos)
	}

	skill := filepath.Join(dir, "pdf")
	writeFile(t, filepath.Join(skill, "evals", "files", "form.pdf"), "%PDF")
	writeFile(t, filepath.Join(skill, "evals", "evals.json"), `{
  "skill_name": "pdf",
  "evals": [
    {
      "id": 1,
      "prompt": "Fill in the form in form.pdf",
      "expected_output": "A filled form",
      "files": ["evals/files/form.pdf"],
      "expectations": ["The output names the form's fields", "The skill used fill_form.py"]
    },
    {"id": 2, "prompt": "Merge two PDFs", "expected_output": "One merged file", "files": []},
    {"id": 3, "prompt": "Rotate page 2", "assertions": [{"text": "Page 2 is rotated"}]}
  ]
}`)
	cases, diags := LoadSkillCreatorEvals(filepath.Join(skill, "evals", "evals.json"))
	if diags != nil {
		t.Fatal(diags)
	}
	judge := func(text string) Assertion { return Assertion{Kind: AssertJudge, Text: text} }
	wantCases := []EvalCase{
		{ID: "pdf-1", Input: "Fill in the form in form.pdf", Expected: "A filled form",
			Files:  []string{filepath.Join(skill, "evals", "files", "form.pdf")},
			Expect: []Assertion{judge("The output names the form's fields"), judge("The skill used fill_form.py")}},
		{ID: "pdf-2", Input: "Merge two PDFs", Expected: "One merged file", Expect: []Assertion{judge("One merged file")}},
		{ID: "pdf-3", Input: "Rotate page 2", Expect: []Assertion{judge("Page 2 is rotated")}},
	}
	ignore := cmpopts.IgnoreTypes(diag.Pos{})
	if d := cmp.Diff(wantCases, cases, ignore, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("evals.json (-want +got):\n%s", d)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A trigger set's blank query is refused at its place: a run of it would
// measure the catalog on no request at all.
func TestTriggerSetBlankQuery(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trigger.json")
	writeFile(t, path, "[\n  {\"query\": \"  \", \"should_trigger\": true}\n]")
	_, diags := LoadTriggerSet(path, "xlsx")
	if len(diags) != 1 || diags[0].Pos.Line != 2 || diags[0].Pos.Col != 13 || !strings.Contains(diags[0].Message, "must not be empty") {
		t.Errorf("diagnostics %v; want one at 2:13 saying the query must not be empty", diags)
	}
}

// An eval with neither expectations nor an expected_output has nothing
// to be judged by: it would pass whenever its run ends, so it is refused
// at its place.
func TestSkillCreatorEvalWithNothingToJudge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "evals", "evals.json")
	writeFile(t, path, "{\"skill_name\": \"pdf\", \"evals\": [\n  {\"id\": 1, \"prompt\": \"Rotate page 2\", \"expectations\": []}\n]}")
	_, diags := LoadSkillCreatorEvals(path)
	if len(diags) != 1 || diags[0].Pos.Line != 2 || diags[0].Pos.Col != 3 || !strings.Contains(diags[0].Message, `"expectations" or an "expected_output"`) {
		t.Errorf("diagnostics %v; want one at 2:3 asking for expectations", diags)
	}
}
