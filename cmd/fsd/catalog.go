package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/fsdrun/fsd/spec"
)

// writeCatalogCost prints each skill's catalog cost in tokens and the
// total: what listing the skills costs every request, before any is read.
func writeCatalogCost(w io.Writer, c spec.Catalog, ids []string) {
	c.Count() // a catalog within its budget's bytes was not counted
	bound := ""
	if c.Max < unbounded {
		bound = fmt.Sprintf(" (max-catalog-tokens %d)", c.Max)
	}
	fmt.Fprintf(w, "catalog: %s, %d tokens%s\n", plural(len(ids), "skill"), c.Total, bound)
	for i, id := range ids {
		mark := ""
		if contains(c.Cut, id) {
			mark = " (description cut to fit)"
		}
		fmt.Fprintf(w, "  %5d  %s%s\n", c.Tokens[i], id, mark)
	}
}

// validatedCatalog is the catalog of the skills among files, each with its
// whole description: what they cost listed together.
func validatedCatalog(files []string) (spec.Catalog, []string) {
	var skills []*spec.Skill
	seen := map[string]bool{}
	for _, f := range files {
		if !spec.IsSkillFile(f) {
			continue
		}
		s, _ := spec.LoadSkill(f)
		if s == nil || s.ID == "" || seen[s.ID] {
			continue
		}
		seen[s.ID] = true
		skills = append(skills, s)
	}
	skills = spec.CatalogSkills(nil, skills)
	ids := make([]string, len(skills))
	for i, s := range skills {
		ids[i] = s.ID
	}
	// Unbounded: validate reports the cost; a workflow's own budget is
	// checked with the workflow (a warning at its limits).
	return spec.FitCatalog(skills, unbounded), ids
}

// unbounded is a catalog budget nothing reaches.
const unbounded = 1 << 30

// catalogCutWarning is the one line fsd run and fsd context print when the
// budget cut descriptions.
func catalogCutWarning(w io.Writer, c spec.Catalog) {
	switch {
	case c.Over:
		fmt.Fprintf(w, "warning: the catalog is %d tokens, over max-catalog-tokens (%d) even with every description cut\n", c.Total, c.Max)
	case len(c.Cut) > 0:
		fmt.Fprintf(w, "warning: the catalog is over max-catalog-tokens (%d): descriptions cut for %s\n", c.Max, strings.Join(c.Cut, ", "))
	}
}
