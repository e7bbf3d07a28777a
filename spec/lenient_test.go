package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeTree writes files (slash paths relative to dir) and returns dir.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const (
	goodMD   = "---\nname: %s\ndescription: A good skill.\n---\n# Body\n"
	brokenMD = "---\nname: broken\ndescription: [unclosed\n---\n# Body\n"
)

func skillMD(name string) string { return strings.Replace(goodMD, "%s", name, 1) }

func ids(skills []*Skill) []string {
	var out []string
	for _, s := range skills {
		out = append(out, s.ID)
	}
	return out
}

// TestLenientSkipsBrokenSkills: a skill that cannot load is left out with
// its first problem, the rest load, and validation still reports it.
func TestLenientSkipsBrokenSkills(t *testing.T) {
	for _, tc := range []struct {
		name     string
		workflow string
		loaded   []string
		skipped  []string
		errs     int
	}{
		{"not named", "name: w\nhost: {}\nskills: [skills]\n", []string{"alpha", "beta"}, []string{"broken"}, 0},
		{"other skills enabled", "name: w\nhost: {}\nskills: [skills]\nenabled: [alpha]\n", []string{"alpha", "beta"}, []string{"broken"}, 0},
		{"enabled names it", "name: w\nhost: {}\nskills: [skills]\nenabled: [alpha, broken]\n", nil, nil, 1},
		{"static task needs it", "name: w\nskills: [skills]\ntasks: [{id: a, goal: g, assignee: broken/x}]\n", nil, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"w.workflow.yaml":        tc.workflow,
				"skills/alpha/SKILL.md":  skillMD("alpha"),
				"skills/beta/SKILL.md":   skillMD("beta"),
				"skills/broken/SKILL.md": brokenMD,
			})
			wf := filepath.Join(dir, "w.workflow.yaml")
			p, diags := LoadProjectLenient(wf)
			errs := diags.Errors(false)
			if len(errs) < tc.errs || (tc.errs == 0 && len(errs) > 0) {
				t.Fatalf("errors: %v", errs)
			}
			if tc.errs > 0 {
				if !strings.Contains(errs.Error(), filepath.Join("broken", "SKILL.md")) {
					t.Errorf("the needed skill's own problem is not reported: %v", errs)
				}
				return
			}
			if diff := cmp.Diff(tc.loaded, ids(p.Skills)); diff != "" {
				t.Errorf("loaded (-want +got):\n%s", diff)
			}
			var skipped []string
			for _, s := range p.Skipped {
				skipped = append(skipped, s.ID)
				if s.Pos.Line < 2 || s.Reason == "" || !strings.HasSuffix(s.File, "SKILL.md") {
					t.Errorf("skipped without file:line:col and reason: %+v", s)
				}
			}
			if diff := cmp.Diff(tc.skipped, skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
			// validate keeps reporting everything.
			if _, vd := LoadProject(wf); len(vd.Errors(false)) == 0 {
				t.Errorf("LoadProject: the broken skill is not an error")
			}
		})
	}
}

// TestLenientToolClash: of two skills declaring one tool name, the later is
// left out with the clash as its reason.
func TestLenientToolClash(t *testing.T) {
	tool := "tools: [{name: fetch, run: {reply: ok}}]\n"
	dir := writeTree(t, map[string]string{
		"w.workflow.yaml":   "name: w\nhost: {}\nskills: [skills]\n",
		"skills/a/SKILL.md": "---\nname: a\ndescription: d\n" + tool + "---\n",
		"skills/b/SKILL.md": "---\nname: b\ndescription: d\n" + tool + "---\n",
	})
	p, diags := LoadProjectLenient(filepath.Join(dir, "w.workflow.yaml"))
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a"}, ids(p.Skills)); diff != "" {
		t.Errorf("loaded (-want +got):\n%s", diff)
	}
	if len(p.Skipped) != 1 || p.Skipped[0].ID != "b" || !strings.Contains(p.Skipped[0].Reason, "clashes") {
		t.Errorf("skipped: %+v", p.Skipped)
	}
}

// TestShadowedSkill: a second skill with an id already found is skipped
// with a warning naming both files.
func TestShadowedSkill(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"w.workflow.yaml":           "name: w\nhost: {}\nskills: [one, two]\n",
		"one/report/SKILL.md":       skillMD("report"),
		"two/report/SKILL.md":       skillMD("report"),
		"two/other/SKILL.md":        skillMD("other"),
		"two/report-copy/skill.yml": "id: report\nname: r\ndescription: d\nversion: 1.0.0\n",
	})
	p, diags := LoadProjectLenient(filepath.Join(dir, "w.workflow.yaml"))
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"report", "other"}, ids(p.Skills)); diff != "" {
		t.Errorf("loaded (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(p.Skills[0].File, filepath.Join(dir, "one")) {
		t.Errorf("the first found should win, got %s", p.Skills[0].File)
	}
	var shadow int
	for _, d := range diags {
		if d.Kind == "duplicate" {
			shadow++
			if !strings.Contains(d.String(), filepath.Join("one", "report", "SKILL.md")) || !strings.Contains(d.Pos.File, "two") {
				t.Errorf("shadowing warning does not name both paths: %s", d)
			}
		}
	}
	if shadow != 2 {
		t.Errorf("want 2 shadowing warnings, got %v", diags)
	}
}

// TestFitCatalog: over the budget, descriptions are cut longest first to a
// common length, deterministically and marked; no skill is dropped.
func TestFitCatalog(t *testing.T) {
	mk := func(id, desc string) *Skill { return &Skill{ID: id, Name: id, Description: desc} }
	skills := []*Skill{
		mk("long", strings.Repeat("lengthy words here ", 60)),
		mk("medium", strings.Repeat("some words ", 12)),
		mk("short", "Tiny."),
	}
	all := FitCatalog(skills, 1<<20)
	if len(all.Cut) != 0 || all.Over {
		t.Fatalf("unbounded: %+v", all)
	}
	all.Count()
	budget := all.Total / 2
	c := FitCatalog(skills, budget)
	if c.Total > budget || c.Over {
		t.Errorf("total %d over budget %d", c.Total, budget)
	}
	if len(c.Entries) != 3 || !strings.Contains(c.Entries[2], "Tiny.") {
		t.Errorf("a skill was dropped or the short one cut: %q", c.Entries)
	}
	if diff := cmp.Diff([]string{"long"}, c.Cut); diff != "" {
		t.Errorf("cut (-want +got):\n%s", diff)
	}
	if !strings.Contains(c.Entries[0], CutMark) {
		t.Errorf("cut entry not marked: %q", c.Entries[0])
	}
	if again := FitCatalog(skills, budget); !cmp.Equal(again, c) {
		t.Error("not deterministic")
	}
	tiny := FitCatalog(skills, 10)
	if !tiny.Over || len(tiny.Entries) != 3 {
		t.Errorf("an impossible budget must cut everything and say so, never drop: %+v", tiny)
	}
}
