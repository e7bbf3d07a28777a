package supply

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/fsdrun/fsd/spec"
)

// Observation is one tool call a worker made and what came back.
type Observation struct {
	// Seq is the observation's 1-based place in the run, set by Record.
	Seq     int             `json:"seq"`
	Task    string          `json:"task"`
	Agent   string          `json:"agent"`
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args,omitempty"`
	Result  string          `json:"result"`
	IsError bool            `json:"error,omitempty"`
}

// Ledger is the run-wide record of every worker's tool calls (D7),
// whatever the policies: a policy only filters what a worker is shown.
// It is safe for concurrent use.
type Ledger struct {
	mu     sync.Mutex
	obs    []Observation
	byTask map[string][]int // indexes into obs, in order
	done   map[string]bool
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{byTask: map[string][]int{}, done: map[string]bool{}}
}

// estimate is the token count used when Select is given none: one token
// per four bytes.
func estimate(s string) int { return (len(s) + 3) / 4 }

// Record appends an observation, numbering it, and returns it as stored.
func (l *Ledger) Record(o Observation) Observation {
	l.mu.Lock()
	defer l.mu.Unlock()
	o.Seq = len(l.obs) + 1
	l.byTask[o.Task] = append(l.byTask[o.Task], len(l.obs))
	l.obs = append(l.obs, o)
	return o
}

// Done marks a task completed: policy `all` shows completed tasks'
// observations only.
func (l *Ledger) Done(task string) {
	l.mu.Lock()
	l.done[task] = true
	l.mu.Unlock()
}

// All returns every observation, in order.
func (l *Ledger) All() []Observation {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.obs)
}

// Select returns what a worker for task sees under policy, oldest first:
// `none` nothing; `deps` its dependencies' observations; `ancestors` those
// of its transitive dependencies (the caller passes them, e.g. from
// board.Ancestors); `recent` the last N across the run (policy.Last);
// `all` every completed task's. Unset fields of policy mean their defaults
// (spec.Flow.WithDefaults). The task's own observations (from an earlier attempt) are never
// included: they are not another worker's. policy.Tools keeps only those
// tools; policy.MaxTokens keeps the newest observations whose rendered
// text fits, measured by count (nil: one token per four bytes; the engine
// passes its BPE counter).
func (l *Ledger) Select(policy spec.Flow, task string, deps, ancestors []string, count func(string) int) []Observation {
	policy = policy.WithDefaults()
	l.mu.Lock()
	defer l.mu.Unlock()
	keep := func(o *Observation) bool {
		return o.Task != task && (len(policy.Tools) == 0 || slices.Contains(policy.Tools, o.Tool))
	}
	var out []Observation
	switch policy.Policy {
	case spec.FlowNone:
		return nil
	case spec.FlowRecent:
		for i := len(l.obs) - 1; i >= 0 && len(out) < policy.Last; i-- {
			if keep(&l.obs[i]) {
				out = append(out, l.obs[i])
			}
		}
		slices.Reverse(out)
	case spec.FlowAll:
		for i := range l.obs {
			if l.done[l.obs[i].Task] && keep(&l.obs[i]) {
				out = append(out, l.obs[i])
			}
		}
	default: // deps, ancestors; an unknown policy was rejected at validation
		tasks := deps
		if policy.Policy == spec.FlowAncestors {
			tasks = append(slices.Clone(ancestors), deps...)
		}
		var idx []int
		seen := map[string]bool{}
		for _, t := range tasks {
			if !seen[t] {
				seen[t] = true
				idx = append(idx, l.byTask[t]...)
			}
		}
		slices.Sort(idx)
		for _, i := range idx {
			if keep(&l.obs[i]) {
				out = append(out, l.obs[i])
			}
		}
	}
	if policy.MaxTokens > 0 {
		if count == nil {
			count = estimate
		}
		out = bound(out, policy.MaxTokens, count)
	}
	return out
}

// bound keeps the newest observations whose rendered text fits in max
// tokens, dropping the oldest first: the latest results are the likeliest
// to matter.
func bound(obs []Observation, max int, count func(string) int) []Observation {
	// A token of valid UTF-8 is at least a byte: when the bytes fit, the
	// tokens do, and nothing needs counting (a provider-backed run never
	// loads the tokenizer for this).
	size := len(header)
	for i := range obs {
		r := renderOne(&obs[i])
		if size += len(r); size > max || !utf8.ValidString(r) {
			size = -1
			break
		}
	}
	if size >= 0 {
		return obs
	}
	used := count(header)
	i := len(obs)
	for i > 0 {
		c := count(renderOne(&obs[i-1]))
		if used+c > max {
			break
		}
		used += c
		i--
	}
	return obs[i:]
}

const header = "Tool calls other workers in this run made before you started (oldest first):\n"

// RenderObservations is the text block a worker sees before its task: each
// observation's task, agent, tool, arguments and result or error. It is
// empty when there is nothing to show.
func RenderObservations(obs []Observation) string {
	if len(obs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(header)
	for i := range obs {
		b.WriteString("\n")
		b.WriteString(renderOne(&obs[i]))
	}
	return b.String()
}

func renderOne(o *Observation) string {
	args := strings.TrimSpace(string(o.Args))
	if args == "" {
		args = "{}"
	}
	outcome := "result"
	if o.IsError {
		outcome = "error"
	}
	return fmt.Sprintf("[%d] task %q (%s) called %s %s\n%s:\n%s\n", o.Seq, o.Task, o.Agent, o.Tool, args, outcome, o.Result)
}
