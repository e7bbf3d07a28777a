package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
)

// TestRunSkipsBrokenSkill: a skill the workflow does not need that cannot
// load is left out with one warning line and a skill.skipped event; the
// run goes on with the rest. Named in enabled:, it stops the run.
func TestRunSkipsBrokenSkill(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "skills", "alpha", "SKILL.md"), "---\nname: alpha\ndescription: The good one.\n---\n# Alpha\nSay hi.\n")
	write(t, filepath.Join(dir, "skills", "broken", "SKILL.md"), "---\nname: broken\ndescription: [unclosed\n---\n")
	write(t, filepath.Join(dir, "w.script.yaml"), "host:\n  - {call: read_skill, args: {id: alpha}}\n  - say: done\n")
	wf := filepath.Join(dir, "w.workflow.yaml")
	write(t, wf, "name: w\nmodel: scripted\nscript: w.script.yaml\nskills: [skills]\nhost: {prompt: hi}\ninput: go\n")

	code, out, errs := fsd(t, "run", wf, "--events", "json", "--runs-dir", filepath.Join(dir, "runs"))
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, errs)
	}
	if n := strings.Count(errs, "warning: "); n != 1 || !strings.Contains(errs, `warning: skill "broken" skipped: `+filepath.Join(dir, "skills", "broken", "SKILL.md")+":3:14: ") {
		t.Errorf("want one warning line naming the skill, file:line:col and reason; stderr:\n%s", errs)
	}
	var skipped []event.Event
	for _, e := range events(t, out) {
		if e.Type == event.SkillSkipped {
			skipped = append(skipped, e)
		}
		if e.Type == event.ToolResult && e.Tool == "read_skill" && e.Error {
			t.Errorf("read_skill alpha failed: %s", e.Result)
		}
	}
	if len(skipped) != 1 || skipped[0].Skill != "broken" || !strings.HasSuffix(skipped[0].At, "SKILL.md:3:14") || skipped[0].Reason == "" {
		t.Errorf("skill.skipped events: %+v", skipped)
	}

	write(t, wf, "name: w\nmodel: scripted\nscript: w.script.yaml\nskills: [skills]\nenabled: [alpha, broken]\nhost: {prompt: hi}\ninput: go\n")
	code, _, errs = fsd(t, "run", wf, "--runs-dir", filepath.Join(dir, "runs"))
	if code != exitProblems || !strings.Contains(errs, filepath.Join("broken", "SKILL.md")+":3:14") {
		t.Errorf("a needed broken skill: exit %d, stderr:\n%s", code, errs)
	}
}

// fsd context calls no model, so it needs no API key; fsd run does.
func TestContextNeedsNoKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	dir := t.TempDir()
	wf := filepath.Join(dir, "w.workflow.yaml")
	write(t, wf, "name: w\nmodel: openai/gpt-x\nhost: {prompt: hi}\ninput: go\nskills: []\n")
	if code, out, errs := fsd(t, "context", wf); code != exitOK || !strings.Contains(out, "=== total:") {
		t.Errorf("context: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := fsd(t, "run", wf, "--runs-dir", filepath.Join(dir, "runs")); code != exitProblems || !strings.Contains(errs, "OPENAI_API_KEY is not set") {
		t.Errorf("run: exit %d\n%s", code, errs)
	}
}

// limits.max-catalog-tokens: over it, descriptions are cut (never skills
// dropped) with a warning naming the skills cut; validate and context
// print each skill's catalog cost and the total.
func TestCatalogBudget(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("Handles quarterly figures and the reports built from them. ", 12)
	write(t, filepath.Join(dir, "skills", "wordy", "SKILL.md"), "---\nname: wordy\ndescription: "+long+"\n---\n")
	write(t, filepath.Join(dir, "skills", "terse", "SKILL.md"), "---\nname: terse\ndescription: Short.\n---\n")
	write(t, filepath.Join(dir, "w.script.yaml"), "host: [{say: ok}]\n")
	wf := filepath.Join(dir, "w.workflow.yaml")
	write(t, wf, "name: w\nmodel: scripted\nscript: w.script.yaml\nskills: [skills]\nlimits: {max-catalog-tokens: 80}\nhost: {prompt: hi}\ninput: go\n")

	code, out, errs := fsd(t, "context", wf)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "warning: the catalog is over max-catalog-tokens (80): descriptions cut for wordy\n") {
		t.Errorf("no warning naming the skill cut:\n%s", errs)
	}
	if !strings.Contains(out, "catalog: 2 skills, ") || !strings.Contains(out, "wordy (description cut to fit)") || !strings.Contains(out, "id: terse") {
		t.Errorf("context:\n%s", out)
	}
	code, _, errs = fsd(t, "validate", dir)
	if code != exitOK || !strings.Contains(errs, "catalog: 2 skills, ") || !strings.Contains(errs, "terse\n") {
		t.Errorf("validate: exit %d\n%s", code, errs)
	}
	if _, out, _ := fsd(t, "validate", wf); !strings.Contains(out, "w.workflow.yaml:5:30: warning: the catalog is over max-catalog-tokens (80): descriptions are cut for wordy") {
		t.Errorf("validate does not warn at the limit:\n%s", out)
	}
}

// TestRunFindsProjectAndUserSkills: a workflow without skills: in a
// subfolder of a repository reads the skills in the repository root's
// .claude/skills and the user's ~/.agents/skills; one note line per
// folder on stderr says where, and that they are not trusted; stdout
// carries the answer alone.
func TestRunFindsProjectAndUserSkills(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	write(t, filepath.Join(home, ".agents", "skills", "mine", "SKILL.md"), "---\nname: mine\ndescription: The user's own.\n---\nMine.\n")
	repo := t.TempDir()
	write(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(repo, ".claude", "skills", "top", "SKILL.md"), "---\nname: top\ndescription: The project's.\n---\nTop.\n")
	dir := filepath.Join(repo, "flows")
	write(t, filepath.Join(dir, "w.script.yaml"), "host:\n  - {call: read_skill, args: {id: top}}\n  - {call: read_skill, args: {id: mine}}\n  - say: done\n")
	wf := filepath.Join(dir, "w.workflow.yaml")
	write(t, wf, "name: w\nmodel: scripted\nscript: w.script.yaml\nhost: {prompt: hi}\ninput: go\n")

	code, out, errs := fsd(t, "run", wf, "--runs-dir", filepath.Join(repo, "runs"))
	if code != exitOK || out != "done\n" {
		t.Fatalf("exit %d, stdout %q; stderr:\n%s", code, out, errs)
	}
	for _, want := range []string{
		"note: skills from " + filepath.Join(repo, ".claude", "skills") + " (the project's, above the workflow's folder; their command tools, scripts and stdio MCP servers run only with --trust " + filepath.Join(repo, ".claude", "skills") + ")\n",
		"note: skills from " + filepath.Join(home, ".agents", "skills") + " (yours, in the home folder; ",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	code, out, errs = fsd(t, "run", wf, "--runs-dir", filepath.Join(repo, "runs"), "--events", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, e := range events(t, out) {
		if e.Type == event.ToolResult && e.Error {
			t.Errorf("%s failed: %s", e.Tool, e.Result)
		}
	}
}
