package spec

import (
	"path/filepath"
	"strings"

	"github.com/fsdrun/fsd/diag"
)

// Skipped is a skill that `fsd run` left out because it could not be
// loaded: the run goes on without it.
type Skipped struct {
	// ID is the id the skill would have had: its name or id if the file
	// said one, else its folder's (or *.skill.yaml file's) name.
	ID   string
	File string
	// Pos and Reason are the first problem that made it unloadable.
	Pos    diag.Pos
	Reason string
}

// LoadProjectLenient loads a workflow and its skills as real agent clients
// do: a skill that cannot be loaded, or that conflicts with the others
// (a tool name clash), is left out and listed in Project.Skipped, and the
// rest load. A skill the workflow needs — named in `enabled:` or as a
// static task's assignee — is still an error, as is any problem of the
// workflow itself. The diagnostics hold those errors and the warnings of
// the skills that loaded. `fsd validate` uses LoadProject, which skips
// nothing.
func LoadProjectLenient(path string, checks ...WorkflowCheck) (*Project, diag.List) {
	c := newCache()
	w, diags := LoadWorkflow(path)
	if w == nil {
		return nil, diags
	}
	diags = append(diags, runChecks(w, checks)...)
	p := &Project{Workflow: w}
	needed := neededSkills(w)
	type entry struct {
		skill *Skill
		file  string
		diags diag.List
	}
	var found []entry
	files, sources := projectSkillFiles(w, &diags)
	p.Sources = sources
	for _, f := range files {
		s, d, first := c.skill(f)
		if !first {
			continue
		}
		found = append(found, entry{s, f, d})
	}
	skip := func(id, file string, why diag.Diagnostic) {
		p.Skipped = append(p.Skipped, Skipped{ID: id, File: file, Pos: why.Pos, Reason: why.Message})
	}
	var kept []*Skill
	keptDiags := map[*Skill]diag.List{}
	failedNeeded := map[string]bool{}
	for _, e := range found {
		id := guessID(e.skill, e.file)
		errs := e.diags.Errors(false)
		if e.skill == nil || len(errs) > 0 {
			if needed[id] {
				failedNeeded[id] = e.skill == nil || e.skill.ID == ""
				diags = append(diags, e.diags...)
				if e.skill != nil {
					kept = append(kept, e.skill)
					keptDiags[e.skill] = nil
				}
				continue
			}
			skip(id, e.file, errs[0])
			continue
		}
		if prev := findID(kept, e.skill.ID); prev != nil {
			diags = append(diags, shadowed(e.skill, prev))
			continue
		}
		kept = append(kept, e.skill)
		keptDiags[e.skill] = e.diags
	}
	// Checks across skills (tool clashes) may still single out one skill;
	// leave it out and check again. Each round drops at least one skill.
	var cross diag.List
	for {
		cross = Check(w, kept)
		var drop *Skill
		var why diag.Diagnostic
		for _, d := range cross.Errors(false) {
			for _, s := range kept {
				if d.Pos.File == s.File && !needed[s.ID] {
					drop, why = s, d
					break
				}
			}
			if drop != nil {
				break
			}
		}
		if drop == nil {
			break
		}
		skip(drop.ID, drop.File, why)
		kept = removeSkill(kept, drop)
	}
	for _, s := range kept {
		diags = append(diags, keptDiags[s]...)
	}
	p.Skills = kept
	diags = append(diags, checkCatalogBudget(w, kept)...)
	for _, d := range cross {
		// "enabled names unknown skill x" says less than x's own problem,
		// which is reported.
		if d.Kind == "ref" && d.Pos.File == w.File && mentionsFailed(d.Message, failedNeeded) {
			continue
		}
		diags = append(diags, d)
	}
	diags.Sort()
	return p, diags.Dedupe()
}

func mentionsFailed(msg string, failed map[string]bool) bool {
	for id, unparsed := range failed {
		if unparsed && strings.Contains(msg, quote(id)) {
			return true
		}
	}
	return false
}

// neededSkills lists the skill ids a workflow cannot run without.
func neededSkills(w *Workflow) map[string]bool {
	out := map[string]bool{}
	if w.EnabledSet {
		for _, id := range w.Enabled {
			out[id] = true
		}
	}
	for _, t := range w.Tasks {
		if skill, _, ok := strings.Cut(t.Assignee, "/"); ok {
			out[skill] = true
		}
	}
	return out
}

// guessID names a skill that may not have parsed: its id, else its folder
// (SKILL.md, skill.yaml) or its file name without .skill.yaml.
func guessID(s *Skill, file string) string {
	if s != nil && s.ID != "" {
		return s.ID
	}
	base := filepath.Base(file)
	if trimmed := strings.TrimSuffix(strings.TrimSuffix(base, ".skill.yaml"), ".skill.yml"); trimmed != base {
		return trimmed
	}
	dir := file
	if abs, err := filepath.Abs(file); err == nil {
		dir = abs
	}
	return NormalizeID(filepath.Base(filepath.Dir(dir)))
}

func findID(list []*Skill, id string) *Skill {
	for _, s := range list {
		if s.ID == id {
			return s
		}
	}
	return nil
}

func removeSkill(list []*Skill, s *Skill) []*Skill {
	out := list[:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// shadowed is the warning for a skill whose id an earlier one already has.
func shadowed(s, first *Skill) diag.Diagnostic {
	return diag.Diagnostic{Pos: s.At(idKey(s)), Kind: "duplicate", Severity: diag.Warning,
		Message: "skill id " + quote(s.ID) + " is already taken by the skill at " + first.At(idKey(first)).String() + ": this one is skipped",
		Hint:    "rename one of them, or remove the copy you do not want"}
}
