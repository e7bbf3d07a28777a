package spec

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/tokens"
)

// DefaultMaxCatalogTokens bounds the catalog (every enabled skill's id,
// name, version and description) when a workflow sets no
// limits.max-catalog-tokens: about 100 skills with two-line descriptions.
const DefaultMaxCatalogTokens = 8000

// CatalogEntry renders one skill's catalog entry as the model sees it,
// with desc as its description. It holds metadata only, never
// instructions (C1).
func CatalogEntry(s *Skill, desc string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- id: %s\n  name: %s\n", s.ID, oneLine(s.Name))
	if s.Version != "" {
		// A SKILL.md without a version has none to show (not 0.0.0).
		fmt.Fprintf(&b, "  version: %s\n", s.Version)
	}
	fmt.Fprintf(&b, "  description: %s\n", oneLine(desc))
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Catalog is a list of skills fitted to a token budget.
type Catalog struct {
	// Entries are the rendered entries, in the order given.
	Entries []string
	// Tokens is each entry's cost (o200k_base), Total their sum. They
	// are counted only when the budget needs them: while the entries'
	// bytes are within Max (a token is at least a byte) nothing is
	// counted, so a run never loads the tokenizer for its catalog. Count
	// fills them in.
	Tokens []int
	Total  int
	// Max is the budget the catalog was fitted to.
	Max int
	// Cut names the skills whose descriptions the budget cut, in order.
	Cut []string
	// Over says the catalog is over Max even with every description cut
	// to nothing: skills are never dropped to fit.
	Over bool
}

// FitCatalog renders skills' entries within max tokens (0: the default).
// Over budget, descriptions are cut deterministically: every description
// longer than a common length L is cut to L characters and marked, with L
// the largest that fits, so the longest lose most and short ones keep
// theirs. No skill is dropped. L is found by bisection on an estimate
// (each description's tokens scale with its length), then checked with
// the tokenizer and lowered until the real count fits: a handful of
// tokenizer passes, not one per bisection step.
func FitCatalog(skills []*Skill, max int) Catalog {
	if max <= 0 {
		max = DefaultMaxCatalogTokens
	}
	full := make([]string, len(skills))
	longest := 0
	for i, s := range skills {
		full[i], _ = s.CatalogDescription()
		longest = maxInt(longest, utf8.RuneCountInString(full[i]))
	}
	build := func(limit int) Catalog {
		c := Catalog{Max: max, Entries: make([]string, len(skills)), Tokens: make([]int, len(skills))}
		for i, s := range skills {
			desc := full[i]
			if limit >= 0 {
				if d, cut := CutText(desc, maxInt(limit, 1)); cut {
					desc = d
					c.Cut = append(c.Cut, s.ID)
				}
			}
			c.Entries[i] = CatalogEntry(s, desc)
			c.Tokens[i] = tokens.Count(c.Entries[i])
			c.Total += c.Tokens[i]
		}
		return c
	}
	if c, ok := fitsByBytes(skills, full, max); ok {
		return c
	}
	c := build(-1)
	if c.Total <= max {
		return c
	}
	// The estimate: an entry costs its fixed part (id, name, version)
	// plus its description's tokens in proportion to the characters kept.
	fixed := make([]int, len(skills))
	descTok := make([]float64, len(skills))
	runes := make([]int, len(skills))
	mark := tokens.Count(CutMark)
	for i, s := range skills {
		fixed[i] = tokens.Count(CatalogEntry(s, ""))
		descTok[i] = float64(maxInt(c.Tokens[i]-fixed[i], 0))
		runes[i] = utf8.RuneCountInString(full[i])
	}
	estimate := func(limit int) int {
		total := 0.0
		for i := range skills {
			total += float64(fixed[i])
			if runes[i] > limit {
				total += descTok[i]*float64(limit)/float64(runes[i]) + float64(mark)
			} else {
				total += descTok[i]
			}
		}
		return int(total + 0.5)
	}
	lo, hi := 1, longest // the estimated L is in [lo, hi)
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if estimate(mid) <= max {
			lo = mid
		} else {
			hi = mid
		}
	}
	c = build(lo)
	for c.Total > max && lo > 1 {
		lo -= maxInt(lo/10, 1) // the estimate was short: cut 10% more
		c = build(lo)
	}
	c.Over = c.Total > max
	return c
}

// fitsByBytes renders the entries whole when their bytes are within max:
// a token of valid UTF-8 text is at least one byte, so they fit without
// counting. Tokens and Total stay empty (Count fills them in).
func fitsByBytes(skills []*Skill, full []string, max int) (Catalog, bool) {
	c := Catalog{Max: max, Entries: make([]string, len(skills))}
	size := 0
	for i, s := range skills {
		c.Entries[i] = CatalogEntry(s, full[i])
		size += len(c.Entries[i])
		if size > max || !utf8.ValidString(c.Entries[i]) {
			return Catalog{}, false
		}
	}
	return c, true
}

// Count fills in Tokens and Total if FitCatalog left them uncounted.
func (c *Catalog) Count() {
	if len(c.Tokens) == len(c.Entries) {
		return
	}
	c.Tokens, c.Total = make([]int, len(c.Entries)), 0
	for i, e := range c.Entries {
		c.Tokens[i] = tokens.Count(e)
		c.Total += c.Tokens[i]
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// CatalogSkills returns the skills a workflow's catalog lists, sorted by
// id: those `enabled:` names, or when it is omitted every skill found
// except those with disable-model-invocation (the model does not pick
// them; a static task or `enabled:` still uses them). The first skill
// found with an id wins.
func CatalogSkills(w *Workflow, skills []*Skill) []*Skill {
	byID := map[string]*Skill{}
	for _, s := range skills {
		if _, dup := byID[s.ID]; !dup && s.ID != "" {
			byID[s.ID] = s
		}
	}
	var out []*Skill
	if w != nil && w.EnabledSet {
		// An explicit list, even an empty one, is the whole selection (C2).
		seen := map[string]bool{}
		for _, id := range w.Enabled {
			if s, ok := byID[id]; ok && !seen[id] {
				seen[id] = true
				out = append(out, s)
			}
		}
	} else {
		for _, s := range byID {
			if !s.DisableModelInvocation {
				out = append(out, s)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// checkCatalogBudget warns when a workflow's catalog is over its
// max-catalog-tokens: the run cuts descriptions to fit.
func checkCatalogBudget(w *Workflow, skills []*Skill) diag.List {
	c := FitCatalog(CatalogSkills(w, skills), w.Limits.MaxCatalogTokens)
	if len(c.Cut) == 0 && !c.Over {
		return nil
	}
	at := w.Limits.At("max-catalog-tokens")
	if at.Line == 0 {
		at = w.At("limits")
	}
	if at.Line == 0 {
		at = w.Pos
	}
	msg := fmt.Sprintf("the catalog is over max-catalog-tokens (%d): descriptions are cut for %s", c.Max, strings.Join(c.Cut, ", "))
	if c.Over {
		msg = fmt.Sprintf("the catalog is %d tokens, over max-catalog-tokens (%d) even with every description cut", c.Total, c.Max)
	}
	return diag.List{{Pos: at, Severity: diag.Warning, Kind: "limit", Message: msg,
		Hint: "raise limits.max-catalog-tokens, shorten descriptions, or list fewer skills in enabled:"}}
}
