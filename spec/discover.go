package spec

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsdrun/fsd/diag"
)

// Discover finds and loads the skills under paths: files are loaded as
// skills whatever their name, folders are searched recursively for
// *.skill.yaml, skill.yaml and SKILL.md (and .yml). Hidden folders are
// skipped, and so are workflows and scripts. A folder holding a SKILL.md or
// skill.yaml is one skill: the rest of it is that skill's resources, not
// searched further. Each file is loaded once, in path order.
func Discover(paths []string) ([]*Skill, diag.List) {
	c := newCache()
	var skills []*Skill
	var diags diag.List
	for _, p := range paths {
		for _, f := range findSkills(p, &diags) {
			s, d, first := c.skill(f)
			if first {
				diags = append(diags, d...)
				if s != nil {
					skills = append(skills, s)
				}
			}
		}
	}
	diags.Sort()
	return skills, diags
}

// findSkills lists the skill files under p.
func findSkills(p string, diags *diag.List) []string {
	st, err := os.Stat(p)
	if err != nil {
		*diags = append(*diags, diag.Errorf(diag.Pos{File: p, Line: 1, Col: 1}, "io", "%s", ioMessage(err)))
		return nil
	}
	if !st.IsDir() {
		return []string{p}
	}
	var out []string
	walk(p, func(file string) {
		if IsSkillFile(file) {
			out = append(out, file)
		}
	})
	return out
}

// walk calls fn for every file fsd may care about under root: hidden
// folders are skipped, and a skill folder yields only its manifests.
func walk(root string, fn func(string)) {
	_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !e.IsDir() {
			fn(p)
			return nil
		}
		if p != root && strings.HasPrefix(e.Name(), ".") {
			return filepath.SkipDir
		}
		if manifests := skillManifests(p); len(manifests) > 0 {
			for _, m := range manifests {
				fn(m)
			}
			return filepath.SkipDir
		}
		return nil
	})
}

// skillManifests returns the SKILL.md and skill.yaml of a skill folder.
func skillManifests(dir string) []string {
	var out []string
	for _, name := range []string{"SKILL.md", "skill.yaml", "skill.yml"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	return out
}

// cache loads each file once and remembers whether its diagnostics were
// handed out, so a skill shared by two workflows is reported once.
type cache struct {
	skills map[string]*cached
}

type cached struct {
	skill *Skill
	diags diag.List
}

func newCache() *cache { return &cache{skills: map[string]*cached{}} }

func key(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// skill loads path (once); first is true the first time.
func (c *cache) skill(path string) (*Skill, diag.List, bool) {
	k := key(path)
	if e, ok := c.skills[k]; ok {
		return e.skill, e.diags, false
	}
	s, d := LoadSkill(path)
	c.skills[k] = &cached{s, d}
	return s, d, true
}
