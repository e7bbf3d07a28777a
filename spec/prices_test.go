package spec

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/diag"
)

// prices: and limits.agents load with their values; mistakes are errors
// at file:line:col.
func TestPricesAndAgentBudgets(t *testing.T) {
	const good = `name: w
host: {}
prices:
  openai/gpt-5.4-mini: {input: 0.25, cached-input: 0.025, output: 2}
  scripted: {input: 1, output: 1_000}
limits:
  max-input-tokens: 100000
  agents:
    worker: {max-input-tokens: 5000}
    team/iso: {max-output-tokens: 300}
`
	w := loadString(t, good, "")
	p := w.Prices["openai/gpt-5.4-mini"]
	if p.Input != 0.25 || p.CachedInput == nil || *p.CachedInput != 0.025 || p.CacheWrite != nil || p.Output != 2 {
		t.Errorf("price %+v", p)
	}
	if w.Prices["scripted"].Output != 1000 {
		t.Errorf("prices %+v", w.Prices)
	}
	if w.Limits.Agents["worker"].MaxInputTokens != 5000 || w.Limits.Agents["team/iso"].MaxOutputTokens != 300 || w.Limits.MaxInputTokens != 100000 {
		t.Errorf("limits %+v", w.Limits)
	}
	// 1,000 tokens in (400 read from the cache, 100 written), 100 out:
	// 500 at input, 400 at cached-input (or input), 100 at input, 100 at output.
	if got := p.Cost(1000, 400, 100, 100); !near(got, (500*0.25+400*0.025+100*0.25+100*2)/1e6) {
		t.Errorf("cost %v", got)
	}

	for _, tc := range []struct{ name, yaml, want string }{
		{"model form", "name: w\nhost: {}\nprices:\n  gpt: {input: 1, output: 2}\n", `w.workflow.yaml:4:3: model "gpt" is not provider/model or scripted`},
		{"price key", "name: w\nhost: {}\nprices:\n  scripted: {input: 1, outptu: 2}\n", `w.workflow.yaml:4:24: unknown key "outptu"; did you mean "output"?`},
		{"agent form", "name: w\nhost: {}\nlimits:\n  agents:\n    iso: {max-input-tokens: 5}\n", `w.workflow.yaml:5:5: limits.agents: "iso" is not skill/agent or worker`},
		{"budget key", "name: w\nhost: {}\nlimits:\n  agents:\n    a/b: {max-tokens: 5}\n", `w.workflow.yaml:5:11: unknown key "max-tokens"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := loadWorkflowString(t, tc.yaml)
			if !strings.Contains(diags.Error(), tc.want) {
				t.Errorf("diagnostics:\n%v\nwant %q", diags, tc.want)
			}
		})
	}

	// A budget for an agent no skill has bounds nothing: Check says so.
	s := &Skill{ID: "team", Agents: []Agent{{Name: "iso"}}}
	w = loadString(t, "name: w\nhost: {}\nlimits:\n  agents:\n    team/iso: {max-input-tokens: 5}\n    team/isso: {max-input-tokens: 5}\n", "")
	diags := Check(w, []*Skill{s})
	if len(diags) != 1 || !strings.Contains(diags.Error(), `w.workflow.yaml:6:16: limits.agents names unknown agent "team/isso"`) || diags[0].Hint == "" {
		t.Errorf("check: %v (hint %q)", diags, diags[0].Hint)
	}
}

func loadWorkflowString(t *testing.T, yaml string) (*Workflow, interface{ Error() string }) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w.workflow.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	w, diags := LoadWorkflow(path)
	return w, relDiags{diags.Error(), filepath.Dir(path)}
}

type relDiags struct{ s, dir string }

func (r relDiags) Error() string {
	return strings.ReplaceAll(r.s, r.dir+string(filepath.Separator), "")
}

func loadString(t *testing.T, yaml, want string) *Workflow {
	t.Helper()
	w, diags := loadWorkflowString(t, yaml)
	if got := diags.Error(); got != want {
		t.Fatalf("diagnostics %q, want %q", got, want)
	}
	return w
}

func near(a, b float64) bool { d := a - b; return d < 1e-12 && d > -1e-12 }

// A limit the schema check accepts as an integer is the limit, whatever
// YAML form it is written in: a float with no fraction (1e3, 10.0) or a
// hex int used to load as 0, "no limit", silently; a number past int's
// range is the largest int.
func TestLimitsIntegerForms(t *testing.T) {
	w := loadString(t, `name: w
host: {}
limits:
  max-input-tokens: 1e3
  max-output-tokens: 10.0
  max-steps: 0x10
  concurrency: 1_000
  max-total-tasks: 99999999999999999999999
  agents:
    worker: {max-input-tokens: 2e2, max-output-tokens: 0o17}
`, "")
	l := w.Limits
	if l.MaxInputTokens != 1000 || l.MaxOutputTokens != 10 || l.MaxSteps != 16 || l.Concurrency != 1000 || l.MaxTotalTasks != math.MaxInt {
		t.Errorf("limits %+v", l)
	}
	if b := l.Agents["worker"]; b.MaxInputTokens != 200 || b.MaxOutputTokens != 15 {
		t.Errorf("worker budget %+v", b)
	}
	_, diags := loadWorkflowString(t, "name: w\nhost: {}\nlimits: {max-input-tokens: 1.5}\n")
	if !strings.Contains(diags.Error(), "max-input-tokens") {
		t.Errorf("max-input-tokens: 1.5 loaded without its error: %v", diags)
	}
}

// A price for a model string no manifest names is a warning (a typo would
// price nothing and every cost read 0), with the names in use; a price
// for a model the workflow uses is not.
func TestPriceForUnusedModelWarns(t *testing.T) {
	s := &Skill{ID: "team", Agents: []Agent{{Name: "iso", Model: "anthropic/claude-sonnet-4-5"}}}
	w := loadString(t, `name: w
model: openai/gpt-5.4-mini
host: {}
prices:
  openai/gpt-5.4-mini: {input: 1, output: 2}
  anthropic/claude-sonnet-4-5: {input: 3, output: 15}
  openai/gpt-5.4-mni: {input: 1, output: 2}
`, "")
	diags := Check(w, []*Skill{s})
	if len(diags) != 1 {
		t.Fatalf("check: %v, want one warning", diags)
	}
	if diags[0].Severity != diag.Warning ||
		!strings.Contains(diags.Error(), `w.workflow.yaml:7:23: warning: prices names model "openai/gpt-5.4-mni", which no workflow, host or agent uses`) ||
		!strings.Contains(diags[0].Hint, `did you mean "openai/gpt-5.4-mini"?`) {
		t.Errorf("check: %v (hint %q)", diags, diags[0].Hint)
	}
	// No model: of its own: the model comes from --model, nothing to check.
	w = loadString(t, "name: w\nhost: {}\nprices:\n  openai/x: {input: 1, output: 2}\n", "")
	if diags := Check(w, nil); len(diags) != 0 {
		t.Errorf("check without model: %v", diags)
	}
}
