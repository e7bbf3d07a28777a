package engine

import (
	"os"
	"slices"
	"sync"
	"time"

	"github.com/fsdrun/fsd/spec"
)

// catalog is the set of skills enabled now. It watches the files it was
// built from and rebuilds itself when one changes, so a version bump or a
// disable takes effect at the next step (C4).
type catalog struct {
	mu     sync.RWMutex
	wfFile string
	// hostModel and wfModel are the workflow's model strings as of the
	// last (re)load.
	hostModel, wfModel string
	enabled            map[string]*spec.Skill // id -> skill
	order              []string               // ids, sorted
	all                map[string]*spec.Skill // every skill found, enabled or not
	// skipped are the skills that would be in the catalog had they
	// loaded: a read of one answers why it cannot be read.
	skipped map[string]spec.Skipped
	stamps  map[string]time.Time // watched file -> mtime when read
	// fitted is the catalog as the model sees it: the enabled skills'
	// entries within limits.max-catalog-tokens, computed once per (re)load.
	fitted spec.Catalog
	// maxTokens is limits.max-catalog-tokens, for a worker's catalog.
	maxTokens int
	reload    func() (*spec.Project, error)
}

func newCatalog(p *spec.Project, reload func() (*spec.Project, error)) *catalog {
	c := &catalog{reload: reload}
	c.set(p)
	return c
}

// set replaces the catalog's contents with p's.
func (c *catalog) set(p *spec.Project) {
	enabled := map[string]*spec.Skill{}
	all := map[string]*spec.Skill{}
	for _, s := range p.Skills {
		if _, dup := all[s.ID]; !dup {
			all[s.ID] = s // the first found wins; spec warns of the rest
		}
	}
	// enabled: as spec lists the catalog (C2; disable-model-invocation
	// skills reach a static task through all, not the catalog).
	listed := spec.CatalogSkills(p.Workflow, p.Skills)
	order := make([]string, len(listed))
	for i, s := range listed {
		order[i] = s.ID
		enabled[s.ID] = s
	}
	fitted := spec.FitCatalog(listed, p.Workflow.Limits.MaxCatalogTokens)
	c.maxTokens = p.Workflow.Limits.MaxCatalogTokens
	skipped := map[string]spec.Skipped{}
	if !p.Workflow.EnabledSet {
		// With an enabled: list a skipped skill is one it leaves out
		// (the ones it names are errors, not skipped): not enabled.
		for _, s := range p.Skipped {
			skipped[s.ID] = s
		}
	}
	stamps := map[string]time.Time{}
	watch := func(path string) {
		if path == "" {
			return
		}
		if fi, err := os.Stat(path); err == nil {
			stamps[path] = fi.ModTime()
		}
	}
	watch(p.Workflow.File)
	for _, s := range p.Skills {
		watch(s.File)
		if s.InstructionsFile != "" {
			watch(joinIn(s.Dir, s.InstructionsFile))
		}
		for _, a := range s.Agents {
			if a.OutputFile != "" {
				watch(joinIn(s.Dir, a.OutputFile))
			}
		}
		for _, m := range s.MCP {
			watch(m.From) // a .mcp.json the skill's mcp: names
		}
	}
	c.mu.Lock()
	c.wfFile, c.enabled, c.order, c.all, c.stamps, c.fitted, c.skipped = p.Workflow.File, enabled, order, all, stamps, fitted, skipped
	c.wfModel, c.hostModel = p.Workflow.Model, ""
	if h := p.Workflow.Host; h != nil {
		c.hostModel = h.Model
	}
	c.mu.Unlock()
}

// changed reports whether a watched file's modification time moved.
func (c *catalog) changed() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for path, t := range c.stamps {
		fi, err := os.Stat(path)
		if err != nil || !fi.ModTime().Equal(t) {
			return true
		}
	}
	return false
}

// refresh reloads the manifests when a watched file changed. A reload that
// fails keeps the catalog as it was: a half-edited file must not take a
// skill away mid-run. It reports whether the catalog changed.
func (c *catalog) refresh() (bool, error) {
	if c.reload == nil || !c.changed() {
		return false, nil
	}
	p, err := c.reload()
	if err != nil {
		return false, err
	}
	c.set(p)
	return true, nil
}

// get returns the enabled skill with id.
func (c *catalog) get(id string) (*spec.Skill, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.enabled[id]
	return s, ok
}

// unavailable returns the skipped skill with id, if the catalog would
// list it had it loaded (C6).
func (c *catalog) unavailable(id string) (spec.Skipped, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.skipped[id]
	return s, ok
}

// find returns any skill found, enabled or not (workers of static tasks
// resolve their agents through it).
func (c *catalog) find(id string) (*spec.Skill, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.all[id]
	return s, ok
}

// entries returns the catalog fitted to its token budget.
func (c *catalog) entries() spec.Catalog {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.fitted
}

// subset is the catalog of the skills ids names that the project has
// (enabled or not: an agent's skills: names them), fitted to the same
// budget as the host's.
func (c *catalog) subset(ids []string) spec.Catalog {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var listed []*spec.Skill
	for _, id := range slices.Sorted(slices.Values(ids)) {
		if s, ok := c.all[id]; ok {
			listed = append(listed, s)
		}
	}
	return spec.FitCatalog(listed, c.maxTokens)
}

// list returns the enabled skills sorted by id.
func (c *catalog) list() []*spec.Skill {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*spec.Skill, len(c.order))
	for i, id := range c.order {
		out[i] = c.enabled[id]
	}
	return out
}

// modelFor resolves the model string of a generator: the agent's
// `model:` (nil agent: the host's), else the workflow's, from the
// manifests as they are now. "" when none names one.
func (c *catalog) modelFor(a *spec.Agent, host bool) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	switch {
	case a != nil && a.Model != "":
		return a.Model
	case host && c.hostModel != "":
		return c.hostModel
	}
	return c.wfModel
}

// Catalog returns the catalog as the model sees it now: each enabled
// skill's entry and token cost, and which descriptions the
// max-catalog-tokens budget cut. `fsd run` and `fsd context` warn of cuts.
func (r *Run) Catalog() spec.Catalog { return r.cat.entries() }
