package spec

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsdrun/fsd/diag"
)

// Discovery bounds: a skills folder is searched at most MaxDiscoveryDepth
// folders deep and through at most MaxDiscoveryFolders folders, so
// pointing `skills:` at a home folder or a monorepo costs milliseconds,
// not minutes. Past either bound the search stops with a warning.
const (
	MaxDiscoveryDepth   = 6
	MaxDiscoveryFolders = 2000
)

// DefaultSkillDirs are searched when a workflow has no `skills:` key:
// where Agent Skills clients keep a project's skills, and a user's in the
// home folder (DefaultSkillSources says which folders).
var DefaultSkillDirs = []string{".agents/skills", ".claude/skills"}

// skippedDirs are never searched: version control and package managers'
// trees hold other people's files, not this project's skills.
var skippedDirs = map[string]bool{".git": true, "node_modules": true}

// hiddenSkillDirs are the hidden folders a search enters, and the one
// folder in each it searches: DefaultSkillDirs, so `fsd validate .` finds
// the skills Agent Skills clients keep there. Other hidden folders stay
// skipped.
var hiddenSkillDirs = func() map[string]string {
	out := map[string]string{}
	for _, d := range DefaultSkillDirs {
		parent, child, _ := strings.Cut(d, "/")
		out[parent] = child
	}
	return out
}()

// Scope says where a default skills folder is, seen from the workflow.
type Scope string

// The scopes of DefaultSkillSources.
const (
	ScopeWorkflow Scope = "workflow" // beside the workflow
	ScopeProject  Scope = "project"  // in a folder above it, up to its repository root
	ScopeUser     Scope = "user"     // in the home folder
)

// A SkillSource is a folder a workflow without `skills:` found skills in.
type SkillSource struct {
	Dir   string
	Scope Scope
}

// DefaultSkillSources lists the skills folders a workflow in dir without
// `skills:` searches (C9), in the order they are searched (the first skill of
// an id wins): DefaultSkillDirs in the nearest folder, from dir up to the
// repository root, that has either, then DefaultSkillDirs in the home
// folder (a user's own skills). The repository root is the nearest folder
// holding .git; without one at or above dir (below the home folder) only
// dir is looked at, so a workflow outside a repository never picks up
// another project's skills. The walk never goes above the home folder.
func DefaultSkillSources(dir string) []SkillSource {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = filepath.Clean(dir)
	}
	home := homeDir()
	var out []SkillSource
	add := func(base string, scope Scope) bool {
		found := false
		for _, d := range DefaultSkillDirs {
			p := filepath.Join(base, filepath.FromSlash(d))
			if st, err := os.Stat(p); err == nil && st.IsDir() && !hasSource(out, p) {
				out = append(out, SkillSource{Dir: p, Scope: scope})
				found = true
			}
		}
		return found
	}
	root := repoRoot(abs, home)
	for f := abs; ; f = filepath.Dir(f) {
		scope := ScopeProject
		if f == abs {
			scope = ScopeWorkflow
		}
		if add(f, scope) || root == "" || f == root || f == filepath.Dir(f) {
			break
		}
	}
	if home != "" {
		add(home, ScopeUser)
	}
	return out
}

func hasSource(list []SkillSource, dir string) bool {
	for _, s := range list {
		if s.Dir == dir {
			return true
		}
	}
	return false
}

// repoRoot is the nearest folder at or above dir that holds .git (a
// folder, or a worktree's file), "" when there is none up to the home
// folder or the filesystem's root.
func repoRoot(dir, home string) string {
	for f := dir; ; f = filepath.Dir(f) {
		if _, err := os.Lstat(filepath.Join(f, ".git")); err == nil {
			return f
		}
		if f == home || f == filepath.Dir(f) {
			return ""
		}
	}
}

// homeDir is the user's home folder, "" when it is not known.
func homeDir() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	if abs, err := filepath.Abs(h); err == nil {
		return abs
	}
	return h
}

// ExpandPath expands a leading ~ or $HOME (${HOME}) to the home folder and
// joins a relative result to dir. Other variables are left as written.
func ExpandPath(p, dir string) string {
	for _, prefix := range []string{"~", "$HOME", "${HOME}"} {
		if p == prefix || strings.HasPrefix(p, prefix+"/") || strings.HasPrefix(p, prefix+string(filepath.Separator)) {
			if h := homeDir(); h != "" {
				p = filepath.Join(h, filepath.FromSlash(p[len(prefix):]))
			}
			break
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, filepath.FromSlash(p))
	}
	return p
}

// Discover finds and loads the skills under paths: files are loaded as
// skills whatever their name, folders are searched recursively for
// *.skill.yaml, skill.yaml and SKILL.md (and .yml). Hidden folders,
// node_modules, workflows and scripts are skipped. A folder holding a
// SKILL.md or skill.yaml is one skill: the rest of it is that skill's
// resources, not searched further. Each file is loaded once, in path order.
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

// projectSkillFiles lists the skill files of a workflow: under its
// `skills:` entries, or under DefaultSkillSources when it has none, which
// it returns.
func projectSkillFiles(w *Workflow, diags *diag.List) ([]string, []SkillSource) {
	var out []string
	if !w.SkillsSet {
		sources := DefaultSkillSources(w.Dir)
		for _, src := range sources {
			out = append(out, findSkills(src.Dir, diags)...)
		}
		return out, sources
	}
	for _, s := range w.Skills {
		p := ExpandPath(s, w.Dir)
		if _, err := os.Stat(p); err != nil {
			continue // LoadWorkflow reported it at the entry
		}
		out = append(out, findSkills(p, diags)...)
	}
	return out, nil
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
	*diags = append(*diags, walk(p, func(file string) {
		if IsSkillFile(file) {
			out = append(out, file)
		}
	})...)
	return out
}

// walk calls fn for every file fsd may care about under root: hidden
// folders (but DefaultSkillDirs), .git and node_modules are skipped, and
// a skill folder yields only its manifests. It stops at the discovery bounds with a warning.
func walk(root string, fn func(string)) diag.List {
	var diags diag.List
	folders := 0
	rootDepth := strings.Count(filepath.Clean(root), string(filepath.Separator))
	bound := func(p, msg string) {
		diags = append(diags, diag.Diagnostic{Pos: diag.Pos{File: p, Line: 1, Col: 1}, Kind: "limit", Severity: diag.Warning,
			Message: msg, Hint: "point skills: at the folder that holds your skills"})
	}
	_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !e.IsDir() {
			fn(p)
			return nil
		}
		if p != root && skipDir(p, e.Name()) {
			return filepath.SkipDir
		}
		folders++
		if folders > MaxDiscoveryFolders {
			bound(root, fmt.Sprintf("searched %d folders under %s; the rest are not searched for skills", MaxDiscoveryFolders, root))
			return filepath.SkipAll
		}
		if manifests := skillManifests(p); len(manifests) > 0 {
			for _, m := range manifests {
				fn(m)
			}
			return filepath.SkipDir
		}
		if strings.Count(filepath.Clean(p), string(filepath.Separator))-rootDepth >= MaxDiscoveryDepth {
			bound(p, fmt.Sprintf("%s is %d folders deep; deeper folders are not searched for skills", p, MaxDiscoveryDepth))
			return filepath.SkipDir
		}
		return nil
	})
	return diags
}

// skipDir reports whether walk leaves the folder p (named name) out:
// hidden folders other than DefaultSkillDirs, and skippedDirs.
func skipDir(p, name string) bool {
	if skippedDirs[name] {
		return true
	}
	if child, ok := hiddenSkillDirs[filepath.Base(filepath.Dir(p))]; ok {
		return name != child // inside .claude, only skills/
	}
	if _, ok := hiddenSkillDirs[name]; ok {
		return false
	}
	return strings.HasPrefix(name, ".")
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
