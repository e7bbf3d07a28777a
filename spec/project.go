package spec

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fsdrun/fsd/diag"
)

// Project is a workflow with the skills its `skills:` entries found.
type Project struct {
	Workflow *Workflow
	// Skills are all the skills found, enabled or not, in discovery order.
	Skills []*Skill
	// Skipped are the skills LoadProjectLenient left out.
	Skipped []Skipped
	// Sources are the folders a workflow without `skills:` found its
	// skills in (DefaultSkillSources); nil with `skills:`.
	Sources []SkillSource
}

// LoadProject loads a workflow, discovers and loads its skills (paths
// relative to the workflow's folder) and runs every check. The project is
// returned whenever the workflow parsed, even with errors.
func LoadProject(workflowPath string, checks ...WorkflowCheck) (*Project, diag.List) {
	c := newCache()
	p, diags := loadProject(c, workflowPath, checks)
	diags.Sort()
	return p, diags
}

func loadProject(c *cache, path string, checks []WorkflowCheck) (*Project, diag.List) {
	w, diags := LoadWorkflow(path)
	if w == nil {
		return nil, diags
	}
	diags = append(diags, runChecks(w, checks)...)
	p := &Project{Workflow: w}
	files, sources := projectSkillFiles(w, &diags)
	p.Sources = sources
	for _, f := range files {
		sk, d, first := c.skill(f)
		if first {
			diags = append(diags, d...)
		}
		if sk == nil || containsSkill(p.Skills, sk) {
			continue
		}
		if prev := findID(p.Skills, sk.ID); prev != nil && sk.ID != "" {
			diags = append(diags, shadowed(sk, prev))
			continue
		}
		p.Skills = append(p.Skills, sk)
	}
	diags = append(diags, Check(w, p.Skills)...)
	diags = append(diags, checkCatalogBudget(w, p.Skills)...)
	return p, diags
}

func containsSkill(list []*Skill, s *Skill) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A WorkflowCheck is a check of a workflow that spec does not own: a
// transport's of the settings it reads from `board:` (package natsboard's
// of board.nats). LoadProject, LoadProjectLenient and ValidateFiles run
// the checks they are given after decoding the workflow, and report their
// diagnostics with their own.
type WorkflowCheck func(*Workflow) diag.List

func runChecks(w *Workflow, checks []WorkflowCheck) diag.List {
	var out diag.List
	for _, c := range checks {
		out = append(out, c(w)...)
	}
	return out
}

// ValidatePaths is ValidateFiles without the list of files it read.
func ValidatePaths(paths []string, strict bool, checks ...WorkflowCheck) diag.List {
	_, d := ValidateFiles(paths, strict, checks...)
	return d
}

// ValidateFiles validates files and folders and returns the files it
// checked and every problem, sorted. A file's kind comes from its name
// (docs/design.md, Files); a YAML file named explicitly that is neither a skill nor a
// script is a workflow. Folders are searched recursively for both. A
// workflow's skills are loaded and checked with it; skills that belong to
// no workflow given are checked against each other. Each file is reported
// once. With strict, warnings count as errors.
func ValidateFiles(paths []string, strict bool, checks ...WorkflowCheck) ([]string, diag.List) {
	c := newCache()
	var diags diag.List
	var skillFiles, workflowFiles, scriptFiles, evalFiles []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			diags = append(diags, diag.Errorf(diag.Pos{File: p, Line: 1, Col: 1}, "io", "%s", ioMessage(err)))
			continue
		}
		if !st.IsDir() {
			switch {
			case IsSkillFile(p):
				skillFiles = append(skillFiles, p)
			case IsScriptFile(p):
				scriptFiles = append(scriptFiles, p)
			case IsEvalFile(p):
				evalFiles = append(evalFiles, p)
			case !isYAMLName(p):
				diags = append(diags, diag.Diagnostic{Pos: diag.Pos{File: p, Line: 1, Col: 1}, Kind: "kind",
					Message: "not a skill or workflow file",
					Hint:    "skills are *.skill.yaml, skill.yaml or SKILL.md; workflows are *.workflow.yaml, workflow.yaml or any YAML file named explicitly"})
			default:
				workflowFiles = append(workflowFiles, p)
			}
			continue
		}
		found := 0
		diags = append(diags, walk(p, func(f string) {
			switch {
			case IsSkillFile(f):
				skillFiles = append(skillFiles, f)
			case IsWorkflowFile(f):
				workflowFiles = append(workflowFiles, f)
			case IsScriptFile(f):
				scriptFiles = append(scriptFiles, f)
			case IsEvalFile(f):
				evalFiles = append(evalFiles, f)
			default:
				return
			}
			found++
		})...)
		if found == 0 {
			diags = append(diags, nothingFound(p))
		}
	}
	files := map[string]string{}
	inWorkflow := map[*Skill]bool{}
	for _, wf := range workflowFiles {
		if _, seen := files[key(wf)]; seen {
			continue
		}
		files[key(wf)] = wf
		p, d := loadProject(c, wf, checks)
		diags = append(diags, d...)
		if p != nil {
			for _, s := range p.Skills {
				inWorkflow[s] = true
				files[key(s.File)] = s.File
			}
			if p.Workflow.Script != "" {
				scriptFiles = append(scriptFiles, p.Workflow.ScriptPath())
			}
		}
	}
	for _, f := range scriptFiles {
		if _, seen := files[key(f)]; seen {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			continue // the workflow reported its script: entry
		}
		files[key(f)] = f
		diags = append(diags, ValidateScript(f)...)
	}
	for _, f := range evalFiles {
		if _, seen := files[key(f)]; !seen {
			files[key(f)] = f
			_, d := LoadEval(f)
			diags = append(diags, d...)
		}
	}
	var alone []*Skill
	for _, f := range skillFiles {
		s, d, first := c.skill(f)
		files[key(f)] = f
		if first {
			diags = append(diags, d...)
		}
		if s != nil && !inWorkflow[s] && !containsSkill(alone, s) {
			alone = append(alone, s)
		}
	}
	diags = append(diags, Check(nil, alone)...)
	diags.Sort()
	diags = diags.Dedupe()
	if strict {
		for i := range diags {
			diags[i].Severity = diag.Error
		}
	}
	list := make([]string, 0, len(files))
	for _, f := range files {
		list = append(list, f)
	}
	sort.Strings(list)
	return list, diags
}

// nothingFound is the error for a folder with nothing to validate: a CI
// job pointed at the wrong path must not pass.
func nothingFound(p string) diag.Diagnostic {
	d := diag.Diagnostic{Pos: diag.Pos{File: p, Line: 1, Col: 1}, Kind: "empty",
		Message: "no skills or workflows found under " + p,
		Hint:    "skills are SKILL.md, skill.yaml or *.skill.yaml; workflows *.workflow.yaml or workflow.yaml; scripts *.script.yaml"}
	entries, _ := os.ReadDir(p)
	var md bool
	for _, e := range entries {
		if !e.IsDir() && strings.EqualFold(e.Name(), "skill.md") {
			md = true
		}
	}
	switch {
	case md:
		d.Message = p + " has no SKILL.md: the file must be named SKILL.md, in capitals"
		d.Hint = ""
	case len(entries) > 0:
		d.Message = "no skills or workflows found under " + p + " (a skill folder needs its SKILL.md)"
	}
	return d
}

func isYAMLName(p string) bool {
	ext := filepath.Ext(p)
	return ext == ".yaml" || ext == ".yml"
}
