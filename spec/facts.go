package spec

import (
	"strings"

	"github.com/fsdrun/fsd/internal/sandbox"
	"github.com/fsdrun/fsd/schemas"
)

// Fact is the default or the values of one manifest key. Facts is the one
// place fsd states them: the decoders and the runtime use the Go names the
// table is built from, and the JSON Schemas' `default` and `enum`
// keywords, README.md and the pages of docs/ are checked against it by tests.
type Fact struct {
	// Kind is the schema the key belongs to: schemas.KindWorkflow or
	// schemas.KindSkill (a SKILL.md's frontmatter shares the skill's).
	Kind string
	// Key is the key's path as a manifest nests it: dotted keys, * for
	// any name of a mapping (agents.*.turns), [] for any element of a
	// list (tools[].run.on-interrupt).
	Key string
	// Default is what fsd uses when the key is absent: an int or a
	// string. nil when the key has no default of its own (it falls back
	// to another key's, or absent means no bound).
	Default any
	// Values are the values the key takes, in the order the schema lists
	// them; nil for a number or free text.
	Values []any
}

// The YAML spellings of values whose Go form is not a string of the same
// name: the isolated supply is the zero ContextSupply, the visibility
// shorthands are Visibility values, and cache: on is NoCache false
// (per-run is CachePerRun).
const (
	supplyIsolatedName = "isolated"
	visibilitySubName  = "sub"
	visibilityPrimName = "primary"
	cacheOn, cacheOff  = "on", "off"
	cachePerRun        = "per-run"
)

// The values of each enumerated key, in the order the schemas list them.
var (
	channelValues     = []string{string(ChannelHandle), string(ChannelInline), string(ChannelAuto)}
	readersValues     = []string{string(ReadersCompact), string(ReadersNamed)}
	shedValues        = []string{string(ShedHalf), string(ShedOldest)}
	approveValues     = []string{string(ApproveAlways), string(ApproveNever), string(ApproveFirst)}
	durabilityValues  = []string{string(DurabilityStep), string(DurabilityEffects)}
	onInterruptValues = []string{string(OnInterruptRetry), string(OnInterruptFail)}
	storeOps          = []string{"get", "set", "delete"}
	supplyValues      = []string{supplyIsolatedName, string(SupplyConversation)}
	visibilityValues  = []string{visibilitySubName, visibilityPrimName}
	networkValues     = []any{string(sandbox.NetOff), string(sandbox.NetOn), true, false}
	flowValues        = []string{string(FlowNone), string(FlowDeps), string(FlowAncestors), string(FlowRecent), string(FlowAll)}
)

// limitFields are the workflow's limits: each key, its default (0: no
// bound) and its field, so decoding, Limits.WithDefaults and Facts read
// one list.
var limitFields = []struct {
	key   string
	def   int
	field func(*Limits) *int
}{
	{"max-loaded-skills", DefaultMaxLoadedSkills, func(l *Limits) *int { return &l.MaxLoadedSkills }},
	{"max-transcript-messages", DefaultMaxTranscriptMessages, func(l *Limits) *int { return &l.MaxTranscriptMessages }},
	{"max-steps", DefaultMaxSteps, func(l *Limits) *int { return &l.MaxSteps }},
	{"concurrency", DefaultConcurrency, func(l *Limits) *int { return &l.Concurrency }},
	{"max-pending-tasks", DefaultMaxPendingTasks, func(l *Limits) *int { return &l.MaxPendingTasks }},
	{"max-total-tasks", DefaultMaxTotalTasks, func(l *Limits) *int { return &l.MaxTotalTasks }},
	{"max-result-tokens", DefaultMaxResultTokens, func(l *Limits) *int { return &l.MaxResultTokens }},
	{"max-catalog-tokens", DefaultMaxCatalogTokens, func(l *Limits) *int { return &l.MaxCatalogTokens }},
	{"max-input-tokens", 0, func(l *Limits) *int { return &l.MaxInputTokens }},
	{"max-output-tokens", 0, func(l *Limits) *int { return &l.MaxOutputTokens }},
}

// oneOf spells values as an error message lists them: "always, never or
// first".
func oneOf(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// limitKeys are the limits' keys, in the table's order.
func limitKeys() []string {
	keys := make([]string, len(limitFields))
	for i, l := range limitFields {
		keys[i] = l.key
	}
	return keys
}

// Facts returns the table of defaults and values, a fresh copy each time.
func Facts() []Fact {
	wf, sk := schemas.KindWorkflow, schemas.KindSkill
	out := []Fact{
		{wf, "channel", string(ChannelAuto), anys(channelValues)},
		{wf, "preview", DefaultPreview, nil},
		{wf, "readers", string(ReadersCompact), anys(readersValues)},
		{wf, "window-shed", string(ShedHalf), anys(shedValues)},
		{wf, "approve", string(ApproveNever), anys(approveValues)},
		{wf, "cache", cacheOn, []any{cacheOn, cacheOff, cachePerRun, true, false}},
		{wf, "durability", string(DurabilityStep), anys(durabilityValues)},
		{wf, "tools[]", nil, anys(WorkspaceTools)},
		// The sandbox is on unless the workflow says off.
		{wf, "sandbox", nil, []any{sandboxOff, false}},
	}
	for _, l := range limitFields {
		if l.def > 0 {
			out = append(out, Fact{wf, "limits." + l.key, l.def, nil})
		}
	}
	ev := schemas.KindEval
	out = append(out,
		Fact{ev, "repeat", DefaultEvalRepeat, nil},
		Fact{ev, "threshold", DefaultEvalThreshold, nil},
		Fact{ev, "steps", 0, nil},
		Fact{ev, "triggers.*[].should-trigger", true, nil})
	return append(out,
		// A skill's channel and approve fall back to the workflow's.
		Fact{sk, "channel", nil, anys(channelValues)},
		Fact{sk, "preview", nil, nil},
		Fact{sk, "approve", nil, anys(approveValues)},
		Fact{sk, "tools[].approve", nil, anys(approveValues)},
		Fact{sk, "tools[].run.timeout", DefaultCommandTimeout.String(), nil},
		Fact{sk, "tools[].run.on-interrupt", string(OnInterruptRetry), anys(onInterruptValues)},
		Fact{sk, "tools[].run.state", nil, anys(storeOps)},
		Fact{sk, "tools[].run.store", nil, anys(storeOps)},
		Fact{sk, "mcp.*.timeout", DefaultMCPTimeout.String(), nil},
		Fact{sk, "mcp.*.approve", nil, anys(approveValues)},
		// A program's network falls back to its skill's, then the
		// workflow's, else off.
		Fact{sk, "sandbox.network", nil, networkValues},
		Fact{sk, "tools[].run.sandbox.network", nil, networkValues},
		Fact{sk, "mcp.*.sandbox.network", nil, networkValues},
		Fact{sk, "agents.*.context-supply", supplyIsolatedName, anys(supplyValues)},
		Fact{sk, "agents.*.turns", DefaultTurns, nil},
		Fact{sk, "agents.*.item-visibility", visibilitySubName, anys(visibilityValues)},
		Fact{sk, "agents.*.flow", string(FlowDeps), anys(flowValues)},
		Fact{sk, "agents.*.flow.policy", string(FlowDeps), anys(flowValues)},
		Fact{sk, "agents.*.flow.last", DefaultRecent, nil},
		Fact{sk, "agents.*.output-repairs", DefaultOutputRepairs, nil},
	)
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
