package eval

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// JudgeAgent is the caller name of the judge's model calls (in a
// cassette, in the model's Caller).
const JudgeAgent = "eval-judge"

// Verdict is what the judge model answers: a typed output, checked
// against VerdictSchema by the engine's typed-output machinery.
type Verdict struct {
	Passed   bool   `json:"passed"`
	Evidence string `json:"evidence"`
}

// VerdictSchema is the JSON Schema of Verdict.
var VerdictSchema = map[string]any{
	"type":                 "object",
	"additionalProperties": false,
	"required":             []any{"passed", "evidence"},
	"properties": map[string]any{
		"passed":   map[string]any{"type": "boolean", "description": "Whether the answer meets the rubric."},
		"evidence": map[string]any{"type": "string", "description": "What in the answer shows it, quoted where possible."},
	},
}

const judgePrompt = `You grade an answer against a rubric. Read the rubric and the answer, decide whether the answer meets the rubric, and quote the part of the answer that shows it as evidence. Judge only by the rubric.`

// judge grades answers with a model: the run's own model (as recorded or
// replayed), asked for the judge's model string.
type judge struct {
	m    model.Model
	name string // the model string asked for; "" lets the router choose
}

// judgeModel returns the judge of a run whose model is m; name is the
// suite's judge: model string.
func judgeModel(m model.Model, name string) *judge { return &judge{m: m, name: name} }

// grade asks the judge whether answer meets rubric. It returns the
// verdict and what the judge's calls used and cost (V4).
func (j *judge) grade(ctx context.Context, rubric, answer, expected string, prices map[string]spec.Price) (Verdict, model.Usage, float64, error) {
	var mu sync.Mutex
	var usage model.Usage
	var cost float64
	counted := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if j.name != "" {
			req.Caller.Model = j.name
		}
		resp, err := j.m.Generate(ctx, req)
		if resp != nil {
			mu.Lock()
			usage = usage.Add(resp.Usage)
			name := resp.Model
			if name == "" {
				name = req.Caller.Model
			}
			if p, ok := prices[name]; ok {
				u := resp.Usage
				cost += p.Cost(u.InputTokens, u.CachedInputTokens, u.CacheWriteTokens, u.OutputTokens)
			}
			mu.Unlock()
		}
		return resp, err
	})
	var b strings.Builder
	b.WriteString("<rubric>\n" + rubric + "\n</rubric>\n\n")
	if expected != "" && expected != rubric {
		b.WriteString("<expected>\n" + expected + "\n</expected>\n\n")
	}
	b.WriteString("<answer>\n" + answer + "\n</answer>\n")
	out, err := engine.Generate(ctx, engine.GeneratorConfig{Name: JudgeAgent, Model: counted, Prompt: judgePrompt,
		Output: VerdictSchema, MaxSteps: 4}, b.String())
	if err != nil {
		return Verdict{}, usage, cost, err
	}
	var v Verdict
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return Verdict{}, usage, cost, errors.New("the judge's verdict is not JSON: " + err.Error())
	}
	return v, usage, cost, nil
}
