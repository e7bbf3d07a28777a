package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/artifact"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/transcript"
)

// readSkillDef is the read_skill tool.
var readSkillDef = model.ToolDef{
	Name: "read_skill",
	Description: "Load a skill from the catalog by id. The result is a receipt; the skill's instructions " +
		"and tools are then in every request while it stays loaded (at most a few skills stay loaded; " +
		"reading another unloads the least recently read).",
	Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"The skill id from the catalog."}},"required":["id"],"additionalProperties":false}`),
}

// hostEnv is the host generator's world: the catalog, its loaded skills,
// and its board.
type hostEnv struct {
	// prompt is the workflow's host prompt.
	prompt string
	log    zerolog.Logger
	mgr    *manager
	tr     *transcript.Transcript
	board  *hostBoard // nil until delegation is wired
	gen    *generator // the host's generator, to tell replayed work
	// builtins are the built-in tools the workflow's tools: offers.
	builtins []skillTool
	// readers is the workflow's reader surface.
	readers spec.Readers
}

// builtin finds an offered built-in tool by name.
func (h *hostEnv) builtin(name string) (skillTool, bool) {
	for _, t := range h.builtins {
		if t.Def().Name == name {
			return t, true
		}
	}
	return skillTool{}, false
}

// skillDirs are the loaded skills' folders: the reading built-ins may
// read them besides the workspace.
func (m *manager) skillDirs() []string {
	dirs := make([]string, 0, len(m.loaded))
	for _, l := range m.loaded {
		dirs = append(dirs, l.skill.Dir)
	}
	return dirs
}

// replaying reports whether the host is restating journaled work now
// (read only from the host's goroutine and the board calls it makes).
func (h *hostEnv) replaying() bool { return h != nil && h.gen != nil && h.gen.replaying }

func (h *hostEnv) prepare(ctx context.Context) {
	changed, err := h.mgr.cat.refresh()
	if err != nil {
		h.log.Warn().Err(err).Msg("manifest changed on disk but did not reload; keeping the previous catalog")
		return
	}
	if changed {
		h.mgr.sync(h.tr)
		if h.gen != nil {
			// The host's model follows the workflow's `model:` too.
			h.gen.caller.Model = h.mgr.cat.modelFor(nil, true)
		}
	}
}

func (h *hostEnv) loaded(id string) bool { return h.mgr.isLoaded(id) }

func (h *hostEnv) current(id, rev string) bool { return h.mgr.current(id, rev) }

// settle appends worker items with history visibility after the runBoard
// result they came from (D6).
func (h *hostEnv) settle() {
	if h.board != nil {
		h.board.flushHistory()
	}
}

// contextBlock renders the current-context block: the system prompt, the
// catalog (metadata only, C1), each loaded skill by its channel (H1, H3);
// and apart from it, the board's status. Both are built from the current
// state on every call (H5) and sit outside the transcript window (W3).
//
// K5, K8: the board's status and which loaded skill is active change
// while the rest stands, so neither is in the system block: the request
// carries them last, after every cache breakpoint.
func (h *hostEnv) contextBlock() (block, status string) {
	var b strings.Builder
	if h.prompt != "" {
		b.WriteString(strings.TrimSpace(h.prompt))
		b.WriteString("\n\n")
	}
	writeCatalog(&b, h.mgr.entries())
	h.writeLoaded(&b)
	// The skill read last is active. Unless a re-read made an earlier one
	// so, that is the one listed last (in load order): only then is it
	// said, every request paying for it otherwise.
	var act *loadedSkill
	if a := h.mgr.active(); a != nil && a != h.mgr.lastLoaded() {
		act = a
	}
	if h.board == nil && act == nil {
		return b.String(), ""
	}
	var s strings.Builder
	if h.board != nil {
		h.board.writeStatus(&s)
	}
	if act != nil {
		// Said here, a re-read costs the request these few tokens, not
		// its cached prefix.
		fmt.Fprintf(&s, "\n<active_skill id=%q%s/>\n", act.skill.ID, versionAttr(act.skill))
	}
	return b.String(), strings.TrimSpace(s.String())
}

func writeCatalog(b *strings.Builder, cat spec.Catalog) {
	b.WriteString("<catalog>\n")
	if len(cat.Entries) == 0 {
		b.WriteString("(no skills are enabled)\n")
	}
	for _, e := range cat.Entries {
		b.WriteString(e) // spec.CatalogEntry, fitted to max-catalog-tokens
	}
	b.WriteString("</catalog>\nRead a skill with read_skill before using it.\n")
}

func (h *hostEnv) writeLoaded(b *strings.Builder) {
	if len(h.mgr.loaded) == 0 {
		return
	}
	b.WriteString("\n<loaded_skills>\n")
	// In load order, so a re-read changes nothing here (K8: which skill
	// is active is said after the last cache breakpoint).
	for _, l := range h.mgr.inLoadOrder() {
		s := l.skill
		switch l.channel {
		case spec.ChannelInline:
			// H3: the whole body, in an envelope naming skill, version and trust tier.
			fmt.Fprintf(b, "<skill id=%q%s channel=\"inline\" trust=%q>\n%s\n</skill>\n",
				s.ID, versionAttr(s), h.mgr.box.trustTier(s), strings.TrimSpace(s.Instructions))
		default:
			// H1: a pointer of a few dozen tokens.
			b.WriteString(pointer(l, h.mgr.box.trustTier(s)) + "\n")
		}
	}
	b.WriteString("</loaded_skills>\n")
	if len(h.mgr.loaded) > 1 {
		// Fixed text: which skill is active changes after the cache
		// breakpoints (contextBlock), this rule never.
		b.WriteString("The skill listed last is the active one, unless an active_skill line at the end of the conversation names another.\n")
	}
	if len(h.builtins) > 0 {
		writeSkillFolders(b, h.mgr.loadedSkills())
	}
	for _, l := range h.mgr.loaded {
		if l.channel == spec.ChannelHandle {
			b.WriteString(readersOf(h.readers).howTo + "\n")
			break
		}
	}
}

// pointer is what a handle skill puts in the context block (H1).
func pointer(l *loadedSkill, trust string) string {
	return fmt.Sprintf("<skill id=%q%s channel=\"handle\" handle=%q trust=%q/>",
		l.skill.ID, versionAttr(l.skill), l.handle, trust)
}

// tools lists what the model may call now: read_skill, the board tools
// while the host has a board, every loaded skill's tools (L2), and the
// reader tools while a handle-channel skill is loaded (H2).
func (h *hostEnv) tools() []model.ToolDef {
	// From most to least stable, so consecutive requests share a prefix
	// (a provider's prompt cache serves it): read_skill, the built-ins,
	// the board tools, the readers, then skills' tools in load order (a
	// new load appends).
	out := []model.ToolDef{readSkillDef}
	for _, t := range h.builtins {
		out = append(out, t.Def())
	}
	if h.board != nil && h.board.active() {
		out = append(out, h.board.defs()...)
	}
	for _, l := range h.mgr.loaded {
		if l.channel == spec.ChannelHandle {
			out = append(out, readersOf(h.readers).defs()...)
			break
		}
	}
	for _, l := range h.mgr.inLoadOrder() {
		for _, t := range l.tools {
			out = append(out, t.Def())
		}
	}
	if h.mgr.scriptsLoaded() {
		out = append(out, runScriptDef)
	}
	return out
}

func (h *hostEnv) command(name string) (bool, bool) {
	if t, ok := h.builtin(name); ok {
		return t.external(), false
	}
	if name == runScriptDef.Name {
		return true, false // a program ran: its journaled result stands on resume
	}
	_, t, ok := h.mgr.skillTool(name)
	if !ok || !t.external() {
		return false, false
	}
	return true, t.failsInDoubt()
}

func (h *hostEnv) approval(c model.ToolCall) approval.Tool {
	if t, ok := h.builtin(c.Name); ok {
		a := t.approval(nil)
		a.Grant = h.mgr.box.grantOf(h.mgr.loadedSkills(), c, t)
		return a
	}
	if c.Name == runScriptDef.Name {
		// A script is its skill's: the skill's policy (and the
		// workflow's default) applies.
		if _, l, bad := h.mgr.scriptCall(c.Args); bad == nil {
			return approval.Tool{Skill: l.skill.Approve, External: true, Grant: h.mgr.box.grantOf(h.mgr.loadedSkills(), c, skillTool{})}
		}
		return approval.Tool{} // a bad call runs nothing: no approval
	}
	if l, t, ok := h.mgr.skillTool(c.Name); ok {
		a := t.approval(l.skill)
		a.Grant = h.mgr.box.grantOf(h.mgr.loadedSkills(), c, t)
		return a
	}
	return approval.Tool{}
}

func (h *hostEnv) call(ctx context.Context, c model.ToolCall) model.ToolResult {
	switch {
	case c.Name == readSkillDef.Name:
		var a struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(c.Args, &a); err != nil {
			return toolError(codeIDInvalid, "arguments must be {\"id\": \"skill-id\"}: "+err.Error())
		}
		return h.mgr.read(ctx, a.ID, h.tr)
	case artifact.IsReader(c.Name):
		text, skill, err := h.mgr.arts.Call(c.Name, c.Args, h.mgr.isLoaded)
		if err != nil {
			// A failed read of a loaded skill's artifact (a missing
			// heading answers with the heading list) is still its
			// instruction text: tag it so unload reclaims it too.
			return model.ToolResult{Text: err.Error(), IsError: true, Artifact: skill}
		}
		return model.ToolResult{Text: text, Artifact: skill}
	case c.Name == runScriptDef.Name:
		return h.mgr.runScript(ctx, c.Args)
	case h.board != nil && h.board.owns(c.Name):
		return h.board.call(ctx, c)
	}
	if t, ok := h.builtin(c.Name); ok {
		res := t.Call(ctx, c.Args, nil)
		return model.ToolResult{Text: res.Text, IsError: res.IsError}
	}
	if l, t, ok := h.mgr.skillTool(c.Name); ok {
		res := t.Call(ctx, c.Args, t.kv(l.state, h.mgr.box.store(l.skill.ID)))
		return model.ToolResult{Text: res.Text, IsError: res.IsError}
	}
	// The skill left between the request and this call (evicted by an
	// earlier call in the same response): L3 holds at dispatch too.
	return model.ToolResult{Text: "Unknown tool: " + c.Name, IsError: true}
}

// versionAttr is a skill envelope's version attribute; none when the skill
// has no version.
func versionAttr(s *spec.Skill) string {
	if s.Version == "" {
		return ""
	}
	return fmt.Sprintf(" version=%q", s.Version)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
