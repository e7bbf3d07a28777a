package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/fsdrun/fsd/artifact"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tool"
	"github.com/fsdrun/fsd/transcript"
)

// Error codes read_skill answers with (C2).
const (
	codeIDInvalid  = "SKILL_ID_INVALID"
	codeNotEnabled = "SKILL_NOT_ENABLED_IN_PROJECT"
	// codeUnavailable is a skill of the project that could not be loaded:
	// broken, not disabled, and the model is told why.
	codeUnavailable = "SKILL_UNAVAILABLE"
)

// Reasons recorded on contextChanged entries and skill events.
const (
	reasonRead           = transcript.ReasonRead
	reasonEvicted        = transcript.ReasonEvicted
	reasonDisabled       = transcript.ReasonDisabled
	reasonVersionChanged = transcript.ReasonVersionChanged
)

// loadedSkill is one skill while it is loaded.
type loadedSkill struct {
	skill   *spec.Skill
	channel spec.Channel
	handle  string // handle channel only
	tools   []skillTool
	byName  map[string]skillTool
	state   *tool.MemKV // per load: discarded on unload (L4)
	notes   []string    // MCP servers that could not be used, for the receipt
	// seq orders loads: requests list skills in load order, not by
	// recency, so a re-read does not reorder the request (cacheable
	// prefix).
	seq int
}

// receipt is the result of read_skill (C3): never the body.
type receipt struct {
	ID      string       `json:"id"`
	Name    string       `json:"name"`
	Version string       `json:"version,omitempty"`
	Channel spec.Channel `json:"channel"`
	Loaded  bool         `json:"loaded"`
	Handle  string       `json:"handle,omitempty"`
	Active  bool         `json:"active"`
	Note    string       `json:"note,omitempty"`
}

// manager owns which skills a generator has loaded: an LRU of at most max
// skills, most recently read last (L1). It knows nothing else of the run.
type manager struct {
	managerDeps
	loaded []*loadedSkill
	loads  int // loads so far, for loadedSkill.seq
	// restating reports whether the host restates a journaled step, so a
	// resumed run's skill events say "replayed"; nil: never.
	restating func() bool
}

// managerDeps are a manager's collaborators: it reads the catalog, spools
// bodies to the artifact store, compiles tools through the toolbox and
// reports loads and unloads through emit.
type managerDeps struct {
	cat  *catalog
	arts *artifact.Store
	box  *toolbox
	emit func(event.Event)
	// channel is the default channel: the workflow's, else auto.
	channel spec.Channel
	// preview is the workflow's preview length; nil: the default.
	preview *int
	max     int
	// only, for a worker, are the ids of its agent's skills: its catalog
	// lists those alone, enabled in the project or not. nil: the
	// catalog's enabled skills (the host).
	only []string
}

func newManager(d managerDeps) *manager {
	if d.channel == "" {
		d.channel = spec.ChannelAuto
	}
	return &manager{managerDeps: d}
}

// channelOf resolves a skill's channel: its own, else the default.
func (m *manager) channelOf(s *spec.Skill) spec.Channel {
	return resolveChannel(s, m.channel)
}

// resolveChannel is s's channel: its own, else def (the workflow's), else
// auto; auto resolved to inline or handle.
func resolveChannel(s *spec.Skill, def spec.Channel) spec.Channel {
	ch := def
	if s.Channel != "" {
		ch = s.Channel
	}
	if ch == "" || ch == spec.ChannelAuto {
		return autoChannel(s)
	}
	return ch
}

// autoChannel is what channel auto picks for s: inline for instructions
// of at most AutoInlineTokens when the skill has no resource files, handle
// otherwise (resources are read by path under the skill's handle, and an
// inline skill has none).
func autoChannel(s *spec.Skill) spec.Channel {
	if len(s.Resources) > 0 {
		return spec.ChannelHandle
	}
	// A body under the threshold has fewer bytes than tokens: no count
	// needed.
	if len(s.Instructions) <= spec.AutoInlineTokens || sharedTokens.count(s.Instructions) <= spec.AutoInlineTokens {
		return spec.ChannelInline
	}
	return spec.ChannelHandle
}

// emitSkill reports a load or an unload.
func (m *manager) emitSkill(loaded bool, s *spec.Skill, reason transcript.Reason) {
	t := event.SkillLoaded
	if !loaded {
		t = event.SkillUnloaded
	}
	replayed := m.restating != nil && m.restating()
	m.emit(event.Event{Type: t, Skill: s.ID, Version: s.Version, Reason: string(reason), Replayed: replayed})
}

func (m *manager) find(id string) (int, *loadedSkill) {
	for i, l := range m.loaded {
		if l.skill.ID == id {
			return i, l
		}
	}
	return -1, nil
}

// current reports whether the catalog holds skill id at revision rev:
// while it does, a context line may quote what the skill added.
func (m *manager) current(id, rev string) bool {
	s, ok := m.lookup(id)
	return ok && s.Revision() == rev
}

// lookup finds a skill this manager's catalog offers.
func (m *manager) lookup(id string) (*spec.Skill, bool) {
	if m.only == nil {
		return m.cat.get(id)
	}
	if !slices.Contains(m.only, id) {
		return nil, false
	}
	return m.cat.find(id)
}

// entries is this manager's catalog as the model sees it.
func (m *manager) entries() spec.Catalog {
	if m.only == nil {
		return m.cat.entries()
	}
	return m.cat.subset(m.only)
}

// isLoaded reports whether id is loaded now; readers and reclaim ask it.
func (m *manager) isLoaded(id string) bool {
	_, l := m.find(id)
	return l != nil
}

// read loads a skill (or makes a loaded one active) and returns the receipt
// or a coded tool error the model reads.
func (m *manager) read(ctx context.Context, id string, tr *transcript.Transcript) model.ToolResult {
	if !spec.ValidID(id) {
		return toolError(codeIDInvalid, fmt.Sprintf("%q is not a skill id: ids are %s", id, spec.IDRule))
	}
	s, ok := m.lookup(id)
	if sk, skipped := m.cat.unavailable(id); !ok && skipped {
		return toolError(codeUnavailable, fmt.Sprintf("skill %q is in the project but could not be loaded (%s: %s); it cannot be read in this run", id, sk.Pos, sk.Reason))
	}
	if !ok {
		return toolError(codeNotEnabled, fmt.Sprintf("skill %q is not enabled in this project; the catalog lists the skills you can read", id))
	}
	if i, l := m.find(id); l != nil {
		// Reading a loaded skill makes it active and loads nothing (L1).
		m.loaded = append(append(m.loaded[:i:i], m.loaded[i+1:]...), l)
		_ = tr.AppendContext(transcript.ContextChange{
			Skill: s.ID, Version: l.skill.Version, Reason: transcript.ReasonReread, Line: rereadLine(l.skill),
		})
		return model.ToolResult{Text: m.receipt(l, "already loaded; now the active skill")}
	}
	l, err := m.load(ctx, s)
	if err != nil {
		return toolError("SKILL_LOAD_FAILED", err.Error())
	}
	var evicted []*loadedSkill
	for len(m.loaded) >= m.max && len(m.loaded) > 0 {
		evicted = append(evicted, m.loaded[0])
		m.loaded = m.loaded[1:]
	}
	m.loads++
	l.seq = m.loads
	m.loaded = append(m.loaded, l)
	var lines []string
	for _, e := range evicted {
		m.unloaded(e, reasonEvicted, "", tr)
		lines = append(lines, evictedLine(e.skill, m.max))
	}
	m.emitSkill(true, s, reasonRead)
	added := s.Instructions
	if l.channel == spec.ChannelHandle {
		added = pointer(l, m.box.trustTier(s))
	}
	line, quoted := loadLine(l, added, spec.PreviewOf(s, m.preview))
	cc := transcript.ContextChange{
		Loaded: []string{s.ID}, Unloaded: ids(evicted),
		Skill: s.ID, Version: s.Version, Reason: reasonRead,
		Line: strings.Join(append(lines, line), "\n"),
	}
	if quoted {
		cc.Quotes = quoteOf(s)
	}
	_ = tr.AppendContext(cc)
	return model.ToolResult{Text: m.receipt(l, strings.Join(l.notes, "; "))}
}

func ids(ls []*loadedSkill) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.skill.ID)
	}
	return out
}

// load prepares a skill: spools its body for the handle channel and
// compiles its tools. Per-load state starts empty (L4).
//
// H1: a handle skill's body is spooled once and the request carries its
// pointer.
func (m *manager) load(ctx context.Context, s *spec.Skill) (*loadedSkill, error) {
	l := &loadedSkill{skill: s, channel: m.channelOf(s), state: tool.NewMemKV(), byName: map[string]skillTool{}}
	if l.channel == spec.ChannelHandle {
		h, err := m.arts.Spool(s.ID, s.Revision(), []byte(s.Instructions), s.Dir, s.Resources)
		if err != nil {
			return nil, fmt.Errorf("spool %s: %w", s.ID, err)
		}
		l.handle = h
	}
	tools, err := m.box.compile(s)
	if err != nil {
		return nil, err
	}
	l.tools = tools
	if len(s.MCP) > 0 {
		// The skill's MCP servers start (or connect) now, and their tool
		// lists are fetched once for this load.
		mt, notes := m.box.mcp.Acquire(ctx, s)
		l.tools = slices.Clip(l.tools) // the compiled list is shared: never append to it
		for _, t := range mt {
			l.tools = append(l.tools, mcpTool(s, t))
		}
		l.notes = notes
	}
	for _, t := range l.tools {
		l.byName[t.Def().Name] = t
	}
	return l, nil
}

// unloaded records one unload: the transcript entry and the event. The
// skill's state goes with it; its store stays with the run (L4).
// now is the version on disk for a version change.
func (m *manager) unloaded(l *loadedSkill, reason transcript.Reason, now string, tr *transcript.Transcript) {
	m.emitSkill(false, l.skill, reason)
	if len(l.skill.MCP) > 0 {
		m.box.mcp.Release(l.skill) // its servers close once idle
	}
	line := disabledLine(l.skill)
	switch reason {
	case reasonEvicted:
		return // recorded on the read's entry, which names both
	case reasonVersionChanged:
		line = versionLine(l.skill, now)
	}
	_ = tr.AppendContext(transcript.ContextChange{
		Unloaded: []string{l.skill.ID}, Skill: l.skill.ID, Version: l.skill.Version, Reason: reason, Line: line,
	})
}

// sync drops loaded skills the catalog no longer carries with the same id
// and version (C4).
func (m *manager) sync(tr *transcript.Transcript) {
	kept := m.loaded[:0]
	var gone []*loadedSkill
	var why []transcript.Reason
	var now []string
	for _, l := range m.loaded {
		cur, ok := m.lookup(l.skill.ID)
		switch {
		case !ok:
			gone, why, now = append(gone, l), append(why, reasonDisabled), append(now, "")
		case cur.Revision() != l.skill.Revision():
			gone, why, now = append(gone, l), append(why, reasonVersionChanged), append(now, cur.Revision())
		default:
			kept = append(kept, l)
		}
	}
	m.loaded = kept
	for i, l := range gone {
		m.unloaded(l, why[i], now[i], tr)
	}
}

func (m *manager) receipt(l *loadedSkill, note string) string {
	rc := receipt{
		ID: l.skill.ID, Name: l.skill.Name, Version: l.skill.Version,
		Channel: l.channel, Loaded: true, Handle: l.handle, Active: true, Note: note,
	}
	b, _ := json.Marshal(rc)
	return string(b)
}

// inLoadOrder returns the loaded skills, earliest load first.
func (m *manager) inLoadOrder() []*loadedSkill {
	out := append([]*loadedSkill(nil), m.loaded...)
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// lastLoaded is the loaded skill loaded last (the last in load order),
// or nil.
func (m *manager) lastLoaded() *loadedSkill {
	var last *loadedSkill
	for _, l := range m.loaded {
		if last == nil || l.seq > last.seq {
			last = l
		}
	}
	return last
}

// active is the most recently read loaded skill, or nil.
func (m *manager) active() *loadedSkill {
	if len(m.loaded) == 0 {
		return nil
	}
	return m.loaded[len(m.loaded)-1]
}

// skillTool finds a loaded skill's tool by name.
func (m *manager) skillTool(name string) (*loadedSkill, skillTool, bool) {
	for _, l := range m.loaded {
		if t, ok := l.byName[name]; ok {
			return l, t, true
		}
	}
	return nil, skillTool{}, false
}

// toolError renders an error result the model can read and correct.
func toolError(code, msg string) model.ToolResult {
	b, _ := json.Marshal(map[string]any{"ok": false, "error": code, "message": msg})
	return model.ErrorResult(code, string(b))
}

func joinIn(dir, rel string) string {
	if filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(dir, filepath.FromSlash(rel))
}
