package spec

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDefaultSkillDirs: a workflow without skills: finds the skills in
// .agents/skills and .claude/skills beside it; `skills: []` finds none.
func TestDefaultSkillDirs(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"w.workflow.yaml":               "name: w\nhost: {}\n",
		"none.workflow.yaml":            "name: w\nhost: {}\nskills: []\n",
		".agents/skills/alpha/SKILL.md": skillMD("alpha"),
		".claude/skills/beta/SKILL.md":  skillMD("beta"),
		"elsewhere/gamma/SKILL.md":      skillMD("gamma"),
	})
	p, diags := LoadProject(filepath.Join(dir, "w.workflow.yaml"))
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"alpha", "beta"}, ids(p.Skills)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	p, _ = LoadProject(filepath.Join(dir, "none.workflow.yaml"))
	if len(p.Skills) != 0 {
		t.Errorf("skills: [] found %v", ids(p.Skills))
	}
}

// TestHomeExpansion: ~ and $HOME in skills: are the home folder.
func TestHomeExpansion(t *testing.T) {
	home := writeTree(t, map[string]string{".claude/skills/mine/SKILL.md": skillMD("mine")})
	t.Setenv("HOME", home)
	for _, entry := range []string{"~/.claude/skills", "$HOME/.claude/skills", "${HOME}/.claude/skills"} {
		dir := writeTree(t, map[string]string{"w.workflow.yaml": "name: w\nhost: {}\nskills: ['" + entry + "']\n"})
		p, diags := LoadProject(filepath.Join(dir, "w.workflow.yaml"))
		if err := diags.Err(); err != nil {
			t.Fatalf("%s: %v", entry, err)
		}
		if diff := cmp.Diff([]string{"mine"}, ids(p.Skills)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", entry, diff)
		}
	}
}

// TestDiscoveryBounds: .git and node_modules are not searched, nor folders
// deeper than MaxDiscoveryDepth (with a warning saying so).
func TestDiscoveryBounds(t *testing.T) {
	deep := "skills/" + strings.Repeat("d/", MaxDiscoveryDepth) + "deep/SKILL.md"
	dir := writeTree(t, map[string]string{
		"skills/a/SKILL.md":                  skillMD("a"),
		"skills/nested/group/b/SKILL.md":     skillMD("b"),
		"skills/node_modules/pkg/x/SKILL.md": skillMD("x"),
		"skills/.git/y/SKILL.md":             skillMD("y"),
		deep:                                 skillMD("deep"),
		"skills/" + strings.Repeat("d/", MaxDiscoveryDepth-2) + "ok/SKILL.md": skillMD("ok"),
	})
	skills, diags := Discover([]string{filepath.Join(dir, "skills")})
	if diff := cmp.Diff([]string{"a", "ok", "b"}, ids(skills)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(diags) != 1 || !strings.Contains(diags[0].Message, "folders deep") {
		t.Errorf("want one depth warning, got %v", diags)
	}
}

// allowed-tools as a string keeps patterns such as Bash(git diff:*) whole.
func TestSplitAllowedTools(t *testing.T) {
	for in, want := range map[string][]string{
		"Read Grep Glob":                           {"Read", "Grep", "Glob"},
		"Bash(git diff:*) Bash(git log:*) Read":    {"Bash(git diff:*)", "Bash(git log:*)", "Read"},
		"Read, Write,Bash(python3 scripts/x.py:*)": {"Read", "Write", "Bash(python3 scripts/x.py:*)"},
		"  mcp__linear__search  ":                  {"mcp__linear__search"},
		"":                                         nil,
	} {
		if diff := cmp.Diff(want, SplitAllowedTools(in)); diff != "" {
			t.Errorf("%q (-want +got):\n%s", in, diff)
		}
	}
	s, _ := LoadSkill(filepath.Join("..", "cmd", "fsd", "testdata", "field", "skills", "code-review", "SKILL.md"))
	if diff := cmp.Diff([]string{"Read", "Grep", "Glob", "Bash(git diff:*)", "Bash(git log:*)"}, s.AllowedTools); diff != "" {
		t.Errorf("code-review (-want +got):\n%s", diff)
	}
}
