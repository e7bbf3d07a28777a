package spec

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fsdrun/fsd/diag"
)

// Channel is how a loaded skill's instructions reach the model.
type Channel string

// The channels. The empty Channel means "not set": the workflow's default
// applies, else ChannelAuto.
const (
	ChannelHandle Channel = "handle"
	ChannelInline Channel = "inline"
	// ChannelAuto is inline for a body of at most AutoInlineTokens and no
	// resource files, handle otherwise: under the threshold the reader
	// definitions and a section read cost about what the body costs, and
	// resources are read by path under a handle. It is the default.
	ChannelAuto Channel = "auto"
)

// AutoInlineTokens is where channel auto switches from inline to handle
// (o200k tokens of the instructions).
const AutoInlineTokens = 1000

// Node is embedded in every manifest value: where the value starts, and
// where each of its keys' values start, so semantic checks and the runtime
// can point diagnostics at the exact line and column.
type Node struct {
	Pos diag.Pos `json:"-"`
	// Keys holds the position of each key's value, in file order (read
	// them with At and Has). A slice of small entries, not a map: a
	// mapping has a handful of keys, and a workflow of 100,000 tasks
	// keeps one Node per task for the whole run.
	Keys []KeyPos `json:"-"`
}

// KeyPos is where the value of one key (as written, kebab-case) starts,
// in the file of its Node's Pos.
type KeyPos struct {
	Key       string
	Line, Col int32
}

// At returns the position of key's value, or the node's own position when
// the key is absent.
func (n Node) At(key string) diag.Pos {
	for _, k := range n.Keys {
		if k.Key == key {
			return diag.Pos{File: n.Pos.File, Line: int(k.Line), Col: int(k.Col)}
		}
	}
	return n.Pos
}

// Has reports whether the mapping sets key (to any value, null too).
func (n Node) Has(key string) bool {
	for _, k := range n.Keys {
		if k.Key == key {
			return true
		}
	}
	return false
}

// Format says which kind of file a skill came from.
type Format string

// Skill file formats.
const (
	FormatYAML    Format = "yaml"     // *.skill.yaml or skill.yaml
	FormatSkillMD Format = "skill.md" // an Agent Skills folder's SKILL.md
)

// Skill is one loaded skill manifest.
type Skill struct {
	Node
	// File is the manifest's path as given or discovered; Dir is the skill's
	// folder, the root that instructions-file and resources must stay in.
	File   string `json:"-"`
	Dir    string `json:"-"`
	Format Format `json:"-"`

	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Version     string  `json:"version"`
	Channel     Channel `json:"channel,omitempty"`
	// Preview is how many characters of what a load adds to the context
	// its context line quotes; nil: the workflow's (PreviewOf).
	Preview *int `json:"preview,omitempty"`
	// Instructions is the markdown body, whichever way it was given:
	// `instructions`, `instructions-file`, or a SKILL.md body.
	Instructions     string `json:"-"`
	InstructionsFile string `json:"instructions-file,omitempty"`

	// Agent Skills fields, kept so a SKILL.md from another product loads
	// unchanged.
	License       string            `json:"license,omitempty"`
	Compatibility string            `json:"compatibility,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	AllowedTools  []string          `json:"allowed-tools,omitempty"`

	// Claude Code's SKILL.md extensions fsd acts on: WhenToUse joins the
	// description in the catalog; DisableModelInvocation keeps the skill
	// out of the catalog (static tasks and explicit use still reach it).
	// The other Claude Code keys are known and kept out of the way.
	WhenToUse              string `json:"when_to_use,omitempty"`
	DisableModelInvocation bool   `json:"disable-model-invocation,omitempty"`

	// Digest is the SHA-256 of the manifest, its instructions file and
	// its agents' output schema files, hex: a SKILL.md without a version is
	// told apart from its edits by it (C4).
	Digest string `json:"-"`
	// schemaFiles are the output schema files' bytes, for Digest.
	schemaFiles [][]byte

	// Approve is the approval policy of the skill's tools that act outside
	// fsd (commands, MCP tools, scripts) and set none of their own.
	Approve Approve `json:"approve,omitempty"`
	// Sandbox is what the skill's programs ask of the sandbox (network,
	// max-procs); nil asks nothing. See SandboxFor.
	Sandbox *Sandbox `json:"sandbox,omitempty"`

	Tools []Tool `json:"tools,omitempty"`
	// MCP are the skill's MCP servers, in file order.
	MCP    []MCPServer `json:"mcp,omitempty"`
	Agents []Agent     `json:"agents,omitempty"` // in file order
	// Resources are the files beside a SKILL.md (relative, slash-separated),
	// readable as artifacts under the skill's handle.
	Resources []string `json:"resources,omitempty"`
}

// Revision names this content of the skill: its version, or for a skill
// without one (a SKILL.md) a prefix of its digest. A changed revision makes
// loaded copies stale (C4).
func (s *Skill) Revision() string {
	if s.Version != "" {
		return s.Version
	}
	if len(s.Digest) >= 16 {
		return "sha256:" + s.Digest[:16]
	}
	return ""
}

// DefaultPreview is how many characters of what a load added to the
// context its context line quotes when neither skill nor workflow says:
// enough to recognise the skill once it is unloaded.
const DefaultPreview = 200

// PreviewOf is a skill's preview length: its own, else the workflow's
// (wf), else DefaultPreview. 0 quotes nothing.
func PreviewOf(s *Skill, wf *int) int {
	switch {
	case s != nil && s.Preview != nil:
		return *s.Preview
	case wf != nil:
		return *wf
	}
	return DefaultPreview
}

// CatalogDescription is what the catalog shows for the skill: the
// description cut to MaxDescription characters (marked as cut), then
// when_to_use. cut reports whether the description was cut.
func (s *Skill) CatalogDescription() (text string, cut bool) {
	text, cut = CutText(s.Description, MaxDescription)
	if w := strings.TrimSpace(s.WhenToUse); w != "" {
		text = strings.TrimSpace(text) + " When to use: " + w
	}
	return text, cut
}

// CutMark ends a description the catalog had to cut.
const CutMark = " […cut]"

// CutText cuts s to at most n characters (runes), at a word boundary where
// one is near, and marks it with CutMark. cut reports whether it did.
func CutText(s string, n int) (string, bool) {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s, false
	}
	r := []rune(s)[:n]
	keep := r
	for i := len(r) - 1; i > n*3/4; i-- {
		if unicode.IsSpace(r[i]) {
			keep = r[:i]
			break
		}
	}
	return strings.TrimRightFunc(string(keep), unicode.IsSpace) + CutMark, true
}

// Agent returns the skill's agent named name.
func (s *Skill) Agent(name string) (*Agent, bool) {
	for i := range s.Agents {
		if s.Agents[i].Name == name {
			return &s.Agents[i], true
		}
	}
	return nil, false
}

// RunKind is what a skill tool does when called.
type RunKind string

// Tool run kinds.
const (
	RunCommand RunKind = "command" // exec argv, no shell
	RunReply   RunKind = "reply"   // render a Go template over the arguments
	RunState   RunKind = "state"   // per-load key/value (L4: gone on unload)
	RunStore   RunKind = "store"   // run-wide key/value (L4: survives unload)
)

// Tool is one tool a skill gives the model.
type Tool struct {
	Node
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Input is the JSON Schema of the arguments, as decoded from YAML
	// (map[string]any and friends). Nil means any object.
	Input map[string]any `json:"input,omitempty"`
	// Approve is the tool's own approval policy; "" defers to its skill's
	// and the workflow's (for a command tool).
	Approve Approve `json:"approve,omitempty"`
	Run     ToolRun `json:"run"`
}

// ToolRun is a tool's `run:` block. Exactly one kind is set.
type ToolRun struct {
	Node
	Kind RunKind `json:"kind"`
	// Command is the argv; each element is a Go template over the arguments.
	Command []string `json:"command,omitempty"`
	// Timeout bounds a command; zero means the runtime default.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Env names environment variables the command may inherit beyond the
	// minimal PATH and HOME.
	Env []string `json:"env,omitempty"`
	// OnInterrupt says what a resumed run does with a call of this command
	// that was in flight when the run stopped (journaled, no result):
	// retry (the default) runs it again with the same FSD_CALL_ID; fail
	// gives the model an error result and runs nothing.
	OnInterrupt OnInterrupt `json:"on-interrupt,omitempty"`
	// Sandbox is what the command asks of the sandbox (network,
	// max-procs); nil asks nothing. See SandboxFor.
	Sandbox *Sandbox `json:"sandbox,omitempty"`
	// Reply is the template of a reply tool.
	Reply string `json:"reply,omitempty"`
	// Op is get, set or delete for state and store tools.
	Op string `json:"op,omitempty"`
}

// OnInterrupt is a command tool's policy for a call in doubt.
type OnInterrupt string

// The on-interrupt policies.
const (
	OnInterruptRetry OnInterrupt = "retry" // run it again, same FSD_CALL_ID (at-least-once)
	OnInterruptFail  OnInterrupt = "fail"  // do not run it again; the model reads "outcome unknown"
)

// Visibility is where a generator's items go (D6).
type Visibility struct {
	Client  bool `json:"client"`
	History bool `json:"history"`
}

// The visibility shorthands.
var (
	VisibilitySub     = Visibility{Client: true, History: false}
	VisibilityPrimary = Visibility{Client: true, History: true}
)

// FlowPolicy names which other workers' observations a worker sees (D7).
type FlowPolicy string

// Flow policies (D7). The empty FlowPolicy means "not set": FlowDeps.
const (
	FlowNone      FlowPolicy = "none"
	FlowDeps      FlowPolicy = "deps"
	FlowAncestors FlowPolicy = "ancestors"
	FlowRecent    FlowPolicy = "recent"
	FlowAll       FlowPolicy = "all"
)

// Flow is an agent's flow policy: which other workers' tool observations it
// sees before it starts.
type Flow struct {
	Policy FlowPolicy `json:"policy"` // default FlowDeps
	// Last bounds `recent` (default DefaultRecent).
	Last      int      `json:"last,omitempty"`
	Tools     []string `json:"tools,omitempty"`
	MaxTokens int      `json:"max-tokens,omitempty"`
}

// WithDefaults returns f with its policy (deps) and, for recent, its
// bound (DefaultRecent) filled in.
func (f Flow) WithDefaults() Flow {
	if f.Policy == "" {
		f.Policy = FlowDeps
	}
	if f.Policy == FlowRecent && f.Last <= 0 {
		f.Last = DefaultRecent
	}
	return f
}

// ContextSupply is what a worker inherits of its parent conversation (D5).
type ContextSupply string

// The context supplies. The empty ContextSupply is isolated.
const (
	SupplyIsolated     ContextSupply = ""
	SupplyConversation ContextSupply = "conversation"
)

// Agent is a member of a skill's team, runnable as a board worker.
type Agent struct {
	Node
	Name          string        `json:"name"`
	Description   string        `json:"description,omitempty"`
	Prompt        string        `json:"prompt,omitempty"`
	Model         string        `json:"model,omitempty"` // a chain's joined by model.ChainSep
	ContextSupply ContextSupply `json:"context-supply,omitempty"`
	Turns         int           `json:"turns,omitempty"` // default DefaultTurns
	Visibility    Visibility    `json:"item-visibility"`
	Flow          Flow          `json:"flow"`
	// Tools are skill tool names, MCP tools as SERVER/TOOL or SERVER/*,
	// and built-in tools (WorkspaceTools) the workflow's tools: offers.
	Tools []string `json:"tools,omitempty"`
	// ToolsPos holds the position of each element of Tools.
	ToolsPos []diag.Pos `json:"-"`
	// Skills are the ids of the skills in the worker's own catalog (read
	// with read_skill, loaded as the host loads); SkillsPos where each is.
	Skills    []string      `json:"skills,omitempty"`
	SkillsPos []diag.Pos    `json:"-"`
	MaxSteps  int           `json:"max-steps,omitempty"`
	Timeout   time.Duration `json:"timeout,omitempty"`
	Retries   int           `json:"retries,omitempty"`
	// Output is the JSON Schema of the agent's final answer (`output:`),
	// as decoded (map[string]any and friends), compiled and checked at
	// load; nil means a free-text answer. OutputFile is the schema file it
	// came from, when `output:` named one (relative to the skill folder).
	Output     map[string]any `json:"output,omitempty"`
	OutputFile string         `json:"output-file,omitempty"`
	// OutputRepairs bounds the repair turns after an answer that does not
	// match Output (nil: DefaultOutputRepairs; 0: none). See Repairs.
	OutputRepairs *int `json:"output-repairs,omitempty"`
}

// DefaultWorkerPrompt is the prompt of the default worker, which runs
// tasks that name no assignee (D1).
const DefaultWorkerPrompt = "You are a worker. Do the task you are given and answer with its result."

// DefaultAgent is the default worker (D1): a plain generator with no
// persona of a skill and no tools, sub visibility, flow deps.
func DefaultAgent() Agent {
	return Agent{Prompt: DefaultWorkerPrompt, Visibility: VisibilitySub}.WithDefaults()
}

// WithDefaults returns a with every default filled in: flow (see
// Flow.WithDefaults) and, with conversation supply, DefaultTurns. Its
// Visibility is taken as it is: the zero Visibility is a real value
// (private), and loading sets sub when item-visibility is absent.
// MaxSteps stays 0 when unset; the workflow's limit applies then.
func (a Agent) WithDefaults() Agent {
	a.Flow = a.Flow.WithDefaults()
	if a.ContextSupply == SupplyConversation && a.Turns <= 0 {
		a.Turns = DefaultTurns
	}
	return a
}

// Limits are a workflow's bounds. Zero values mean the defaults below.
type Limits struct {
	Node
	MaxLoadedSkills       int `json:"max-loaded-skills"`
	MaxTranscriptMessages int `json:"max-transcript-messages"`
	MaxSteps              int `json:"max-steps"`
	Concurrency           int `json:"concurrency"`
	MaxPendingTasks       int `json:"max-pending-tasks"`
	MaxTotalTasks         int `json:"max-total-tasks"`
	// MaxResultTokens bounds a tool result in the window: a larger one is
	// kept as an artifact and the window shows a preview and its handle.
	MaxResultTokens int `json:"max-result-tokens"`
	// MaxInputTokens and MaxOutputTokens bound the tokens the run's model
	// calls may use, as the provider reports them; 0 is no bound.
	MaxInputTokens   int `json:"max-input-tokens,omitempty"`
	MaxOutputTokens  int `json:"max-output-tokens,omitempty"`
	MaxCatalogTokens int `json:"max-catalog-tokens"`
	// Agents are token budgets per agent ("skill/agent", or "worker" for
	// the default worker): what all of the agent's tasks in the run use
	// together.
	Agents map[string]Budget `json:"agents,omitempty"`
}

// DefaultWorkerName names the default worker where a workflow names
// agents (limits.agents) and where a board shows a task without an
// assignee (board.DefaultWorker).
const DefaultWorkerName = "worker"

// HostName names the run's host where tasks are named too: its
// generator's records and requests (fsd show --task host), its cache key.
// No task may take it, so a name never means two generators.
const HostName = "host"

// MaxTaskIDBytes bounds a task id: ids name files, events and graph nodes.
const MaxTaskIDBytes = 128

// TaskIDProblem says what is wrong with a task id other than being
// HostName, or "": one rule for `fsd validate` (static tasks) and the
// board (every task added), so validate never passes an id the run refuses.
func TaskIDProblem(id string) string {
	if len(id) > MaxTaskIDBytes {
		return "is longer than 128 bytes"
	}
	for _, r := range id {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return "contains white space or control characters"
		}
	}
	return ""
}

// Budget bounds the tokens an agent's model calls use, all its tasks in
// the run together, as the provider reports them; 0 is no bound.
type Budget struct {
	Node
	MaxInputTokens  int `json:"max-input-tokens,omitempty"`
	MaxOutputTokens int `json:"max-output-tokens,omitempty"`
}

// Price is what one model's tokens cost, per million tokens, in whatever
// currency the workflow's prices are written in. CachedInput (tokens read
// from the provider's prompt cache) and CacheWrite (tokens written to it)
// cost Input when not given.
type Price struct {
	Node
	Input       float64  `json:"input"`
	CachedInput *float64 `json:"cached-input,omitempty"`
	CacheWrite  *float64 `json:"cache-write,omitempty"`
	Output      float64  `json:"output"`
}

// Cost prices a call's tokens: in counts every input token, cached of
// them were read from the prompt cache and written were written to it.
func (p Price) Cost(in, cached, written, out int) float64 {
	cachedPrice, writePrice := p.Input, p.Input
	if p.CachedInput != nil {
		cachedPrice = *p.CachedInput
	}
	if p.CacheWrite != nil {
		writePrice = *p.CacheWrite
	}
	plain := max(in-cached-written, 0)
	return (float64(plain)*p.Input + float64(cached)*cachedPrice + float64(written)*writePrice + float64(out)*p.Output) / 1e6
}

// Defaults of Limits.
const (
	DefaultMaxLoadedSkills       = 3
	DefaultMaxTranscriptMessages = 60
	DefaultMaxSteps              = 25
	DefaultConcurrency           = 4
	DefaultMaxPendingTasks       = 100
	DefaultMaxTotalTasks         = 500
	DefaultMaxResultTokens       = 2000
	DefaultTurns                 = 8
	DefaultRecent                = 8
)

// Defaults of the bounds on one call when the manifest sets none: a
// command tool's run time (tools[].run.timeout) and one call of an MCP
// server's tools (mcp.*.timeout).
const (
	DefaultCommandTimeout = 30 * time.Second
	DefaultMCPTimeout     = 30 * time.Second
)

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	for _, lf := range limitFields {
		if v := lf.field(&l); *v <= 0 && lf.def > 0 {
			*v = lf.def
		}
	}
	return l
}

// Host configures the conversation's host generator.
type Host struct {
	Node
	Prompt string `json:"prompt,omitempty"`
	// Model is a model string, or a fallback chain's joined by
	// model.ChainSep.
	Model string `json:"model,omitempty"`
}

// BoardConfig is a workflow's `board:`: where its tasks run. spec reads
// its keys as the file format has them and keeps where each was written
// (Node); the transport a key belongs to says what its value means and
// checks it (a WorkflowCheck), and keeps its secrets out of records.
type BoardConfig struct {
	Node
	// NATS is `board.nats` as written: package natsboard's URL list of
	// NATS servers with JetStream, to which the board's tasks go.
	NATS string `json:"nats,omitempty"`
}

// Task is a static task of a workflow.
type Task struct {
	Node
	ID       string   `json:"id"`
	Goal     string   `json:"goal"`
	Assignee string   `json:"assignee,omitempty"` // skill/agent; "" = default worker
	Deps     []string `json:"deps,omitempty"`
	// DepsPos holds the position of each element of Deps.
	DepsPos []diag.Pos `json:"-"`
	Input   string     `json:"input,omitempty"`
}

// Workflow is one loaded workflow file.
type Workflow struct {
	Node
	File string `json:"-"`
	Dir  string `json:"-"`

	Name string `json:"name"`
	// Model is a model string, or a fallback chain's joined by
	// model.ChainSep.
	Model  string `json:"model,omitempty"`
	Script string `json:"script,omitempty"` // path, relative to Dir (ScriptPath)
	// Skills are files or folders, relative to Dir, searched recursively.
	Skills []string `json:"skills,omitempty"`
	// SkillsPos holds the position of each element of Skills.
	SkillsPos []diag.Pos `json:"-"`
	// SkillsSet says the workflow has a skills: key; without one, skills
	// are looked for in DefaultSkillSources.
	SkillsSet bool `json:"-"`
	// Enabled lists skill ids. EnabledSet distinguishes an omitted key
	// (every skill found) from `enabled: []` (none, C2).
	Enabled    []string `json:"enabled,omitempty"`
	EnabledSet bool     `json:"-"`
	// EnabledPos holds the position of each element of Enabled.
	EnabledPos []diag.Pos `json:"-"`
	Channel    Channel    `json:"channel,omitempty"`
	// Preview is the default of skills' preview; nil: DefaultPreview.
	Preview *int `json:"preview,omitempty"`
	// Workspace is workspace: as written (WorkspaceDir resolves it);
	// "" is a fresh folder in the run record.
	Workspace string `json:"workspace,omitempty"`
	// Tools are the built-in tools (WorkspaceTools) the host and the
	// default worker are offered, and an agent may list.
	Tools []string `json:"tools,omitempty"`
	// ToolsPos holds the position of each element of Tools.
	ToolsPos []diag.Pos `json:"-"`
	// Readers and WindowShed choose the reader tools' surface and how the
	// window sheds; empty: compact and half.
	Readers    Readers    `json:"readers,omitempty"`
	WindowShed WindowShed `json:"window-shed,omitempty"`
	// Approve is the default approval policy of tools that act outside
	// fsd (commands, MCP tools, scripts) when neither the tool nor its
	// skill sets one.
	Approve Approve `json:"approve,omitempty"`
	// Sandbox confines every program of the run's skills (see
	// SandboxFor); nil is the default sandbox, Off runs them unconfined.
	Sandbox *Sandbox `json:"sandbox,omitempty"`
	// NoCache is `cache: off`: requests ask providers for no prompt-cache
	// breakpoints or cache key (caching is on by default).
	NoCache bool `json:"-"`
	// CachePerRun is `cache: per-run`: requests are cached as with on,
	// but their provider cache key names the run, not the workflow, so
	// runs never share a cache bucket.
	CachePerRun bool `json:"-"`
	// Durability is when generators wait for the run journal to be on
	// disk: step (default) or commit-before-effects; --durability
	// overrides it.
	Durability Durability `json:"durability,omitempty"`
	// Strict fails the run when a skill was skipped or an MCP server
	// cannot start (fsd run --strict).
	Strict bool   `json:"strict,omitempty"`
	Limits Limits `json:"limits"`
	// Prices are per model string ("openai/gpt-5.4-mini", "scripted"):
	// with them, run records and views show what the run cost.
	Prices map[string]Price `json:"prices,omitempty"`
	Host   *Host            `json:"host,omitempty"`
	// Board is where the board's tasks run; nil: in this process.
	Board *BoardConfig `json:"board,omitempty"`
	Tasks []Task       `json:"tasks,omitempty"`
	Input string       `json:"input,omitempty"`
}

// ScriptPath is the file of the workflow's script: Script joined to the
// workflow's folder unless it is absolute (a leading ~ is the home
// folder, as for skills). Empty when there is no script.
func (w *Workflow) ScriptPath() string {
	if w.Script == "" {
		return ""
	}
	return ExpandPath(w.Script, w.Dir)
}
