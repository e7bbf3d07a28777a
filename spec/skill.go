package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"
	"golang.org/x/text/unicode/norm"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/internal/lazyre"
	"github.com/fsdrun/fsd/schemas"
)

// Keys of each manifest mapping, in the order the docs list them.
var (
	skillKeys   = []string{"id", "name", "description", "version", "channel", "preview", "instructions", "instructions-file", "license", "compatibility", "metadata", "allowed-tools", "approve", "sandbox", "tools", "mcp", "agents"}
	skillMDKeys = append([]string{"name", "description", "version", "channel", "preview", "instructions-file", "license", "compatibility", "metadata", "allowed-tools", "approve", "sandbox", "tools", "mcp", "agents"}, ClaudeCodeKeys...)
	toolKeys    = []string{"name", "description", "input", "approve", "run"}
	runKeys     = []string{"command", "timeout", "env", "on-interrupt", "sandbox", "reply", "state", "store"}
	runKinds    = []string{"command", "reply", "state", "store"}
	agentKeys   = []string{"description", "prompt", "model", "context-supply", "turns", "item-visibility", "flow", "tools", "max-steps", "timeout", "retries", "output", "output-repairs", "skills"}
	visKeys     = []string{"client", "history"}
	flowKeys    = []string{"policy", "last", "tools", "max-tokens"}
)

// ClaudeCodeKeys are Claude Code's SKILL.md frontmatter extensions: known
// keys in a SKILL.md, so a skill written for Claude Code loads without
// warnings. fsd acts on when_to_use and disable-model-invocation and keeps
// the rest (slash-command and subagent settings it has no use for).
var ClaudeCodeKeys = []string{"when_to_use", "argument-hint", "disable-model-invocation", "user-invocable",
	"model", "effort", "context", "agent", "hooks", "paths", "shell"}

// ReservedTools are fsd's own tool names; a skill tool may not take one,
// or the model could not tell them apart. The packages that define those
// tools import spec, so the names are spelled here again; the engine's
// TestReservedToolsAreFsdsTools holds the two spellings together.
var ReservedTools = []string{
	"read_skill", "addTask", "listTasks", "cancelTask", "runBoard",
	"artifact_md", "artifact_read", "run_skill_script",
	"Bash", "Read", "Write", "Edit", "Glob", "Grep", // WorkspaceTools
}

// IsSkillFile reports whether a file name is a skill (docs/design.md, Files):
// *.skill.yaml, skill.yaml (or .yml) or SKILL.md.
func IsSkillFile(name string) bool {
	base := filepath.Base(name)
	return base == "SKILL.md" || base == "skill.yaml" || base == "skill.yml" ||
		strings.HasSuffix(base, ".skill.yaml") || strings.HasSuffix(base, ".skill.yml")
}

// IsWorkflowFile reports whether a file name is a workflow by name.
func IsWorkflowFile(name string) bool {
	base := filepath.Base(name)
	return base == "workflow.yaml" || base == "workflow.yml" ||
		strings.HasSuffix(base, ".workflow.yaml") || strings.HasSuffix(base, ".workflow.yml")
}

// IsScriptFile reports whether a file is a scripted-model script.
func IsScriptFile(name string) bool {
	base := filepath.Base(name)
	return strings.HasSuffix(base, ".script.yaml") || strings.HasSuffix(base, ".script.yml")
}

// LoadSkill loads one skill file: a YAML manifest (*.skill.yaml,
// skill.yaml) or an Agent Skills SKILL.md. It runs the schema and every
// check that needs only this file (ids, versions, durations, run kinds,
// visibility and flow values, paths), so the diagnostics are complete for
// the file; references between files are Check's. The skill is returned
// whenever the file parsed, even with errors, so callers can go on
// checking; it is nil when the file could not be read or parsed.
func LoadSkill(path string) (*Skill, diag.List) {
	data, diags := readFile(path)
	if diags != nil {
		return nil, diags
	}
	return loadSkill(path, data)
}

// loadSkill loads a skill from data read from path (path names the kind
// and the folder instructions-file and resources are relative to).
func loadSkill(path string, data []byte) (*Skill, diag.List) {
	s, diags := loadSkillKind(path, data)
	if s != nil {
		h := sha256.New()
		h.Write(data)
		h.Write([]byte{0})
		h.Write([]byte(s.Instructions))
		for _, b := range s.schemaFiles {
			h.Write([]byte{0})
			h.Write(b)
		}
		s.Digest = hex.EncodeToString(h.Sum(nil))
	}
	return s, diags
}

func loadSkillKind(path string, data []byte) (*Skill, diag.List) {
	if filepath.Base(path) == "SKILL.md" {
		return loadSkillMD(path, data)
	}
	root, diags := parseYAML(path, data)
	if diags != nil {
		return nil, diags
	}
	s := &Skill{File: path, Dir: filepath.Dir(path), Format: FormatYAML}
	return s, finish(schemas.KindSkill, root, path, func(d *decoder) {
		d.unknown = diag.Error
		decodeSkill(d, root, s, skillKeys)
		if base := filepath.Base(path); base == "skill.yaml" || base == "skill.yml" {
			// A skill.yaml is its folder's manifest: the folder is the
			// skill, and the files beside it are its resources, as with
			// SKILL.md.
			var rd diag.List
			s.Resources, rd = listResources(s.Dir, path)
			d.diags = append(d.diags, rd...)
		}
	})
}

// finish validates root against the schema of kind, runs decode, and
// merges the two: where decode reported a problem at a place, the
// schema's complaint about the same place is dropped (decode's message is
// the more specific one: "invalid duration", not "does not match pattern").
func finish(kind string, root *yaml.Node, file string, decode func(*decoder)) diag.List {
	sd := schemas.Validate(kind, root, file)
	for _, x := range sd {
		if x.Kind == "yaml" {
			// The tree could not be turned into a value (an alias bomb):
			// walking it would cost as much, so stop here.
			return sd
		}
	}
	d := &decoder{file: file}
	decode(d)
	at := make(map[diag.Pos]bool, len(d.diags))
	for _, x := range d.diags {
		at[x.Pos] = true
	}
	out := d.diags
	for _, x := range sd {
		if !at[x.Pos] {
			out = append(out, x)
		}
	}
	out.Sort()
	return out
}

func decodeSkill(d *decoder, root *yaml.Node, s *Skill, known []string) {
	var instrNode, agentsNode *yaml.Node
	for _, f := range d.fields(root, known, &s.Node) {
		switch f.key {
		case "id":
			s.ID, _ = str(f.v)
			if s.ID != "" || f.v.ShortTag() == "!!str" {
				checkID(d, f.v, s.ID, "id")
			}
		case "name":
			s.Name, _ = str(f.v)
		case "description":
			s.Description, _ = str(f.v)
			if n := utf8.RuneCountInString(s.Description); n > MaxDescription {
				d.diags = append(d.diags, diag.Diagnostic{Pos: d.pos(f.v), Severity: diag.Warning, Kind: "limit",
					Message: fmt.Sprintf("description is %d characters, over the Agent Skills limit of %d: the catalog shows it cut", n, MaxDescription),
					Hint:    "move the detail into the instructions; keep what says when to use the skill"})
			}
		case "when_to_use":
			s.WhenToUse, _ = str(f.v)
		case "disable-model-invocation":
			s.DisableModelInvocation, _ = boolean(f.v)
		case "version":
			if v, ok := str(f.v); ok {
				s.Version = v
				if !ValidSemver(v) {
					d.errorf(f.v, "version", "invalid version %q", v).Hint = "use a semantic version MAJOR.MINOR.PATCH such as 1.2.0"
				}
			} else if f.v.Kind == yaml.ScalarNode && f.v.ShortTag() != "!!null" {
				// `version: 1.2` is a number to YAML; say how to fix it.
				d.errorf(f.v, "version", "invalid version %s: not a string", f.v.Value).Hint = "use a semantic version MAJOR.MINOR.PATCH such as 1.2.0, quoted if YAML would read it as a number"
			}
		case "channel":
			c, _ := str(f.v)
			s.Channel = Channel(c)
		case "preview":
			s.Preview = decodePreview(f.v)
		case "instructions":
			s.Instructions, _ = str(f.v)
			instrNode = f.v
		case "instructions-file":
			s.InstructionsFile, _ = str(f.v)
		case "license":
			s.License, _ = scalarText(f.v)
		case "compatibility":
			s.Compatibility, _ = str(f.v)
		case "metadata":
			var n Node
			for _, p := range d.pairs(f.v, &n) {
				if v, ok := scalarText(p.v); ok {
					if s.Metadata == nil {
						s.Metadata = map[string]string{}
					}
					s.Metadata[p.key] = v
				}
			}
		case "allowed-tools":
			s.AllowedTools = decodeAllowedTools(d, f.v)
		case "approve":
			s.Approve = decodeApprove(d, f.v)
		case "sandbox":
			s.Sandbox = decodeSandbox(d, f.v, false)
		case "tools":
			decodeTools(d, f.v, s)
		case "mcp":
			decodeMCP(d, f.v, s)
		case "agents":
			agentsNode = f.v
		}
	}
	if agentsNode != nil {
		// After tools and mcp, wherever they are in the file: agents
		// refer to them.
		decodeAgents(d, agentsNode, s)
	}
	if s.InstructionsFile != "" {
		if instrNode != nil {
			d.errorf(instrNode, "instructions", "both instructions and instructions-file are set; keep one")
		} else if text, ok := readInside(d, s.Dir, s.InstructionsFile, s.Node.At("instructions-file")); ok {
			s.Instructions = text
		}
	}
}

func decodeTools(d *decoder, n *yaml.Node, s *Skill) {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return
	}
	seen := map[string]diag.Pos{}
	for _, e := range n.Content {
		var t Tool
		for _, f := range d.fields(e, toolKeys, &t.Node) {
			switch f.key {
			case "name":
				t.Name, _ = str(f.v)
			case "description":
				t.Description, _ = str(f.v)
				if len(t.Description) > MaxToolDescription {
					d.errorf(f.v, "limit", "tool description is %d bytes, over the %d-byte (%d KiB) limit; it is sent with every model request that offers the tool", len(t.Description), MaxToolDescription, MaxToolDescription>>10).Hint =
						"say what the tool does and when to call it; detail belongs in the skill's instructions"
				}
			case "input":
				decodeInput(d, f.v, &t)
			case "approve":
				t.Approve = decodeApprove(d, f.v)
			case "run":
				decodeRun(d, f.v, &t.Run)
			}
		}
		if t.Name != "" {
			at := t.At("name")
			if prev, dup := seen[t.Name]; dup {
				d.diags = append(d.diags, diag.Errorf(at, "duplicate", "tool %q is declared twice in this skill (first at line %d)", t.Name, prev.Line))
			} else {
				seen[t.Name] = at
			}
			if contains(ReservedTools, t.Name) {
				d.diags = append(d.diags, diag.Errorf(at, "name", "tool name %q is reserved by fsd", t.Name))
			}
			if strings.HasPrefix(t.Name, MCPToolPrefix) {
				d.diags = append(d.diags, diag.Errorf(at, "name", "tool name %q starts with %q, which fsd keeps for MCP tools", t.Name, MCPToolPrefix))
			}
		}
		s.Tools = append(s.Tools, t)
	}
}

func decodeInput(d *decoder, n *yaml.Node, t *Tool) {
	if n.Kind != yaml.MappingNode {
		return
	}
	v, err := schemas.Value(n)
	if err != nil {
		return // reported by the schema pass
	}
	m, _ := v.(map[string]any)
	if typ, ok := m["type"]; ok && typ != "object" {
		d.errorf(n, "input", "a tool's input schema must have type object, got %v", typ).Hint = "put the arguments under properties:"
	}
	if schemaFits(d, d.file, n, "the tool's input schema", m) {
		t.Input = m
	}
}

func decodeRun(d *decoder, n *yaml.Node, r *ToolRun) {
	var kinds []string
	var timeout, env, onInterrupt, sb *yaml.Node
	for _, f := range d.fields(n, runKeys, &r.Node) {
		switch f.key {
		case "command":
			r.Command, _ = d.strList(f.v)
			if seq := deref(f.v); seq != nil && seq.Kind == yaml.SequenceNode {
				for i, e := range seq.Content {
					if s, ok := str(e); ok {
						checkTemplate(d, deref(e), fmt.Sprintf("command[%d]", i), s, toolFuncs)
					}
				}
			}
		case "timeout":
			timeout = f.v
			r.Timeout = d.duration(f.v)
		case "env":
			env = f.v
			r.Env, _ = d.strList(f.v)
		case "on-interrupt":
			onInterrupt = f.v
			v, _ := str(f.v)
			r.OnInterrupt = OnInterrupt(v)
		case "sandbox":
			sb = f.v
			r.Sandbox = decodeSandbox(d, f.v, false)
		case "reply":
			r.Reply, _ = str(f.v)
			checkTemplate(d, f.v, "reply", r.Reply, toolFuncs)
		case "state", "store":
			r.Op, _ = str(f.v)
		}
		if contains(runKinds, f.key) {
			kinds = append(kinds, f.key)
		}
	}
	if n == nil || deref(n).Kind != yaml.MappingNode {
		return
	}
	switch len(kinds) {
	case 0:
		d.errorf(n, "run", "run needs one of command, reply, state or store")
		return
	case 1:
		r.Kind = RunKind(kinds[0])
	default:
		d.errorf(n, "run", "run sets %s; set only one of command, reply, state or store", strings.Join(kinds, " and "))
		return
	}
	if r.Kind != RunCommand {
		names := map[*yaml.Node]string{timeout: "timeout", env: "env", onInterrupt: "on-interrupt", sb: "sandbox"}
		for _, x := range []*yaml.Node{timeout, env, onInterrupt, sb} {
			if x != nil {
				d.errorf(x, "run", "%s applies only to a command", names[x])
			}
		}
	}
}

func decodeAgents(d *decoder, n *yaml.Node, s *Skill) {
	var holder Node
	for _, p := range d.pairs(n, &holder) {
		// item-visibility absent is sub; other defaults are filled by
		// Agent.WithDefaults where the agent runs, so they live in one place.
		a := Agent{Name: p.key, Visibility: VisibilitySub}
		checkID(d, p.k, p.key, "agent name")
		for _, f := range d.fields(p.v, agentKeys, &a.Node) {
			switch f.key {
			case "description":
				a.Description, _ = str(f.v)
			case "prompt":
				a.Prompt, _ = str(f.v)
			case "model":
				a.Model = decodeModel(d, f.v)
			case "context-supply":
				v, _ := str(f.v)
				switch v {
				case supplyIsolatedName:
				case string(SupplyConversation):
					a.ContextSupply = SupplyConversation
				default:
					if f.v.ShortTag() == "!!str" {
						d.errorf(f.v, "value", "context-supply %q is not %s", v, oneOf(supplyValues))
					}
				}
			case "turns":
				a.Turns, _ = integer(f.v)
			case "item-visibility":
				decodeVisibility(d, f.v, &a.Visibility)
			case "flow":
				decodeFlow(d, f.v, &a.Flow)
			case "tools":
				a.Tools, a.ToolsPos = d.strList(f.v)
				pos := a.ToolsPos
				for i, name := range a.Tools {
					if slices.Contains(WorkspaceTools, name) {
						continue // whether the workflow offers it is Check's
					}
					if problem, isRef := s.mcpRef(name); isRef {
						if problem != "" {
							d.diags = append(d.diags, diag.Diagnostic{Pos: pos[i], Kind: "ref", Message: fmt.Sprintf("agent %q lists tool %q: %s", a.Name, name, problem)})
						}
						continue
					}
					if !s.hasTool(name) {
						d.diags = append(d.diags, diag.Diagnostic{Pos: pos[i], Kind: "ref",
							Message: fmt.Sprintf("agent %q lists tool %q, which this skill does not declare", a.Name, name),
							Hint:    didYouMean(name, append(s.toolNames(), WorkspaceTools...))})
					}
				}
			case "skills":
				a.Skills, a.SkillsPos = d.strList(f.v)
			case "max-steps":
				a.MaxSteps, _ = integer(f.v)
			case "timeout":
				a.Timeout = d.duration(f.v)
			case "retries":
				a.Retries, _ = integer(f.v)
			case "output":
				decodeOutput(d, f.v, s, &a)
			case "output-repairs":
				if r, ok := integer(f.v); ok {
					a.OutputRepairs = &r
				}
			}
		}
		if a.Has("output-repairs") {
			if !a.Has("output") {
				d.diags = append(d.diags, diag.Diagnostic{Pos: a.At("output-repairs"), Severity: diag.Warning, Kind: "output",
					Message: fmt.Sprintf("agent %q sets output-repairs without output: there is nothing to repair", a.Name),
					Hint:    "declare the answer's JSON Schema under output:, or remove output-repairs"})
			}
		}
		if a.Pos.Line == 0 {
			a.Pos = d.pos(p.k)
		}
		s.Agents = append(s.Agents, a)
	}
}

func (s *Skill) hasTool(name string) bool {
	for _, t := range s.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func (s *Skill) toolNames() []string {
	out := make([]string, len(s.Tools))
	for i, t := range s.Tools {
		out[i] = t.Name
	}
	return out
}

func decodeVisibility(d *decoder, n *yaml.Node, v *Visibility) {
	if s, ok := str(n); ok {
		switch s {
		case visibilitySubName:
			*v = VisibilitySub
		case visibilityPrimName:
			*v = VisibilityPrimary
		default:
			d.errorf(n, "value", "item-visibility %q is not %s", s, oneOf(visibilityValues)).Hint = "or write {client: true, history: false}"
		}
		return
	}
	var node Node
	for _, f := range d.fields(n, visKeys, &node) {
		b, _ := boolean(f.v)
		if f.key == "client" {
			v.Client = b
		} else {
			v.History = b
		}
	}
}

func decodeFlow(d *decoder, n *yaml.Node, fl *Flow) {
	policy := func(n *yaml.Node) {
		s, ok := str(n)
		if !ok {
			return
		}
		if !contains(flowValues, s) {
			d.errorf(n, "value", "flow policy %q is not %s", s, oneOf(flowValues)).Hint = didYouMean(s, flowValues)
			return
		}
		fl.Policy = FlowPolicy(s)
	}
	if _, ok := str(n); ok {
		policy(n)
		return
	}
	var node Node
	for _, f := range d.fields(n, flowKeys, &node) {
		switch f.key {
		case "policy":
			policy(f.v)
		case "last":
			fl.Last, _ = integer(f.v)
		case "tools":
			fl.Tools, _ = d.strList(f.v)
		case "max-tokens":
			fl.MaxTokens, _ = integer(f.v)
		}
	}
}

// ValidID reports whether id follows the Agent Skills name rules as the
// reference validator (skills-ref) reads them: after NFKC normalization,
// 1-64 characters, each a letter or digit of any script that is not
// uppercase, or a hyphen, with no leading, trailing or double hyphen.
// "weekly-report", "技能", "мой-навык" and "café" are ids; "Weekly" and
// "ÄPFEL" are not. Such ids are safe as file names: no separators, dots
// or spaces.
func ValidID(id string) bool {
	id = NormalizeID(id)
	n := utf8.RuneCountInString(id)
	if n == 0 || n > 64 || id[0] == '-' || id[len(id)-1] == '-' || strings.Contains(id, "--") {
		return false
	}
	for _, r := range id {
		if r == '-' {
			continue
		}
		if !(unicode.IsLetter(r) || unicode.IsNumber(r)) || unicode.ToLower(r) != r {
			return false
		}
	}
	return true
}

// NormalizeID is the form ids are compared in: NFKC, as skills-ref
// compares a name with its folder.
func NormalizeID(id string) string {
	if isASCII(id) {
		return id // NFKC leaves ASCII unchanged; skip the table walk
	}
	return norm.NFKC.String(id)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// IDRule is ValidID's rule in words (C5). Every message about an id (a
// manifest's, read_skill's) states it from here, so what fsd says is
// what it checks.
const IDRule = "1-64 characters after NFKC normalization: letters of any script that are not uppercase, digits, and single hyphens not at the start or end"

// idHint says what an id may be.
const idHint = "use " + IDRule

func checkID(d *decoder, n *yaml.Node, id, what string) {
	if !ValidID(id) {
		d.errorf(n, "id", "invalid %s %q", what, id).Hint = idHint
	}
}

// semver is the official semver.org pattern.
var semver = lazyre.New(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// ValidSemver reports whether v is a semantic version (semver.org 2.0.0).
func ValidSemver(v string) bool { return semver().MatchString(v) }
