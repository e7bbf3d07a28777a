package engine

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// digests names and hashes what the run is made from: the resolved
// workflow (goal, tasks, limits, the skills found), the script, every
// skill manifest and the files of each skill that decide what it says or
// runs (skillFiles), keyed by paths relative to the workflow's folder.
func (r *Run) digests() (journal.Digests, error) {
	d := journal.Digests{}
	y, err := runrecord.ResolvedJSON(r.relSkills(withoutBudgets(r.project)), r.opts.Redact)
	if err != nil {
		return nil, err
	}
	key := "workflow"
	if r.wf.File != "" {
		key += " " + r.rel(r.wf.File)
	}
	d[key] = journal.Sum(y)
	if r.wf.Script != "" {
		path := r.wf.ScriptPath()
		if err := d.AddFile("script "+r.rel(path), path); err != nil {
			return nil, err
		}
	}
	for _, s := range r.project.Skills {
		if s.File == "" {
			continue // built in code, not read from a file
		}
		if err := d.AddFile(fmt.Sprintf("skill %s (%s)", s.ID, r.rel(s.File)), s.File); err != nil {
			return nil, err
		}
		for _, path := range skillFiles(s) {
			if err := d.AddFile(fmt.Sprintf("file %s of skill %s", r.rel(path), s.ID), path); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// skillFiles are the files of skill s, besides its manifest, that decide
// what it tells the model or what its tools run: its instructions-file,
// its resources (a SKILL.md folder's references and scripts), every file
// under scripts/ (run_skill_script runs them), and every file in its
// folder that a command tool's or an MCP server's argv names (the
// program, or the script an interpreter is given). Sorted, each once; a
// file that is not there is left out, so a resume reports it gone.
func skillFiles(s *spec.Skill) []string {
	if s.Dir == "" {
		return nil
	}
	root, err := filepath.Abs(s.Dir)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	add := func(path string) {
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, filepath.FromSlash(path))
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return // outside the skill's folder: not the skill's to digest
		}
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
			seen[path] = true
		}
	}
	if s.InstructionsFile != "" {
		add(s.InstructionsFile)
	}
	for _, res := range s.Resources {
		add(res)
	}
	n := 0
	_ = filepath.WalkDir(filepath.Join(root, "scripts"), func(path string, e fs.DirEntry, err error) error {
		if err != nil || n >= spec.MaxResources {
			return filepath.SkipAll
		}
		if e.Type().IsRegular() {
			n++
			add(path)
		}
		return nil
	})
	argv := func(args []string) {
		for _, a := range args {
			if a != "" && !strings.Contains(a, "{{") {
				add(a)
			}
		}
	}
	for _, t := range s.Tools {
		if t.Run.Kind == spec.RunCommand {
			argv(t.Run.Command)
		}
	}
	for _, m := range s.MCP {
		argv(m.Command)
	}
	out := make([]string, 0, len(seen))
	for path := range seen {
		out = append(out, path)
	}
	sort.Strings(out)
	return out
}

// withoutBudgets is p with what a resume may change cleared: the token
// budgets (limits.max-input-tokens, max-output-tokens, agents) and the
// prices. They bound or price the run without changing what it does, so
// a run stopped by a budget resumes under a raised one without --force.
//
// R5: budgets and prices bound or price the run without changing what it
// does.
func withoutBudgets(p *spec.Project) *spec.Project {
	wf := *p.Workflow
	wf.Limits.MaxInputTokens, wf.Limits.MaxOutputTokens, wf.Limits.Agents = 0, 0, nil
	wf.Prices = nil
	q := *p
	q.Workflow = &wf
	return &q
}

// relSkills is p with its skills' files named as rel names them: the
// same whichever folder the workflow was loaded from (a resume loads it
// by the absolute path run.json keeps).
func (r *Run) relSkills(p *spec.Project) *spec.Project {
	q := *p
	q.Skills = make([]*spec.Skill, len(p.Skills))
	for i, s := range p.Skills {
		c := *s
		if c.File != "" {
			c.File = r.rel(c.File)
		}
		q.Skills[i] = &c
	}
	return &q
}

// rel names a path relative to the workflow's folder when it can,
// whichever folder fsd runs in.
func (r *Run) rel(path string) string {
	if r.wf.Dir != "" {
		if rel, err := filepath.Rel(absPath(r.wf.Dir), absPath(path)); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(path)
}
