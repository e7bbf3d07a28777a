package spec

import (
	"os"
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

// An allowed-tools entry fsd cannot honour is a warning at the entry's
// line and column, never an error: a SKILL.md from another product loads.
func TestAllowedToolsWarnings(t *testing.T) {
	p := filepath.Join(writeTree(t, map[string]string{"mixed/SKILL.md": "---\nname: mixed\ndescription: d\n" +
		"allowed-tools: Read Bash(git diff:*) WebFetch(domain:example.com) Edit(~/x)\n" +
		"---\nBody.\n"}), "mixed", "SKILL.md")
	s, diags := LoadSkill(p)
	if diags.Err() != nil {
		t.Fatalf("a warning failed the load: %v", diags)
	}
	var got []string
	for _, d := range diags {
		got = append(got, d.String())
	}
	want := []string{
		p + `:4:38: warning: allowed-tools entry "WebFetch(domain:example.com)" grants nothing: fsd narrows only Bash, Read, Write and Edit by a specifier; write WebFetch alone to allow all its calls [allowed-tools]`,
		p + `:4:67: warning: allowed-tools entry "Edit(~/x)" grants nothing: paths under the home folder (~/…) are not supported; write a path relative to the workspace or //absolute/path [allowed-tools]`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(s.AllowedTools) != 4 {
		t.Errorf("entries %q: all are kept as written", s.AllowedTools)
	}

	// The list form points at each item.
	if err := os.WriteFile(p, []byte("---\nname: mixed\ndescription: d\nallowed-tools:\n  - Read\n  - Bash(ls\n  - '*'\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags = LoadSkill(p)
	got = nil
	for _, d := range diags {
		got = append(got, d.Pos.String()+" "+d.Message)
	}
	want = []string{
		p + `:6:5 allowed-tools entry "Bash(ls" grants nothing: an entry with ( ends with ), as in Bash(git diff:*)`,
		p + `:7:5 allowed-tools entry "*" grants nothing: "*" is not a tool name (letters, digits, _ and -; mcp__server__* for all of a server's tools)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("list form (-want +got):\n%s", diff)
	}

	// In a quoted string, past the quote.
	if err := os.WriteFile(p, []byte("---\nname: mixed\ndescription: d\nallowed-tools: \"Read Glob(*.go)\"\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, diags = LoadSkill(p); len(diags) != 1 || diags[0].Pos.String() != p+":4:22" {
		t.Errorf("quoted form: %v", diags)
	}
}

// TestValidateFindsHiddenSkillDirs: `fsd validate .` searches
// .claude/skills and .agents/skills, and no other hidden folder, nor any
// other folder inside .claude or .agents.
func TestValidateFindsHiddenSkillDirs(t *testing.T) {
	dir := writeTree(t, map[string]string{
		".claude/skills/alpha/SKILL.md":   skillMD("alpha"),
		".agents/skills/beta/SKILL.md":    skillMD("beta"),
		".claude/commands/gamma/SKILL.md": skillMD("gamma"),
		".other/delta/SKILL.md":           skillMD("delta"),
		".git/epsilon/SKILL.md":           skillMD("epsilon"),
	})
	files, diags := ValidateFiles([]string{dir}, false)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		got = append(got, filepath.ToSlash(rel))
	}
	if diff := cmp.Diff([]string{".agents/skills/beta/SKILL.md", ".claude/skills/alpha/SKILL.md"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestDefaultSkillSources: a workflow without skills: in a subfolder
// finds the repository root's skills folders (the nearest folder, up to
// the one holding .git, that has any), then the user's in the home
// folder; outside a repository only its own folder; a project skill wins
// over a user's of the same id.
func TestDefaultSkillSources(t *testing.T) {
	home := writeTree(t, map[string]string{
		".claude/skills/mine/SKILL.md": skillMD("mine"),
		".agents/skills/top/SKILL.md":  skillMD("top"),
	})
	t.Setenv("HOME", home)
	repo := writeTree(t, map[string]string{
		".git/HEAD":                         "ref: refs/heads/main\n",
		".claude/skills/top/SKILL.md":       skillMD("top"),
		"a/b/w.workflow.yaml":               "name: w\nhost: {}\n",
		"near/.agents/skills/near/SKILL.md": skillMD("near"),
		"near/mid/w.workflow.yaml":          "name: w\nhost: {}\n",
		"listed/w.workflow.yaml":            "name: w\nhost: {}\nskills: []\n",
	})
	loose := writeTree(t, map[string]string{
		".claude/skills/above/SKILL.md": skillMD("above"),
		"sub/w.workflow.yaml":           "name: w\nhost: {}\n",
	})
	for _, tc := range []struct {
		workflow string
		ids      []string
		sources  []SkillSource
	}{
		{filepath.Join(repo, "a", "b"), []string{"top", "mine"}, []SkillSource{
			{filepath.Join(repo, ".claude", "skills"), ScopeProject},
			{filepath.Join(home, ".agents", "skills"), ScopeUser},
			{filepath.Join(home, ".claude", "skills"), ScopeUser}}},
		{filepath.Join(repo, "near", "mid"), []string{"near", "top", "mine"}, []SkillSource{
			{filepath.Join(repo, "near", ".agents", "skills"), ScopeProject},
			{filepath.Join(home, ".agents", "skills"), ScopeUser},
			{filepath.Join(home, ".claude", "skills"), ScopeUser}}},
		{filepath.Join(repo, "listed"), nil, nil},
		{filepath.Join(loose, "sub"), []string{"top", "mine"}, []SkillSource{
			{filepath.Join(home, ".agents", "skills"), ScopeUser},
			{filepath.Join(home, ".claude", "skills"), ScopeUser}}},
	} {
		p, diags := LoadProject(filepath.Join(tc.workflow, "w.workflow.yaml"))
		if err := diags.Err(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.ids, ids(p.Skills)); diff != "" {
			t.Errorf("%s: ids (-want +got):\n%s", tc.workflow, diff)
		}
		if diff := cmp.Diff(tc.sources, p.Sources); diff != "" {
			t.Errorf("%s: sources (-want +got):\n%s", tc.workflow, diff)
		}
	}
}
