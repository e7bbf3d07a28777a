package spec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/schemas"
)

var (
	workflowKeys = []string{"name", "model", "script", "skills", "enabled", "channel", "preview", "readers", "window-shed", "workspace", "tools", "approve", "sandbox", "cache", "durability", "strict", "limits", "prices", "board", "host", "tasks", "input"}
	limitsKeys   = append(limitKeys(), "agents")
	budgetKeys   = []string{"max-input-tokens", "max-output-tokens"}
	priceKeys    = []string{"input", "cached-input", "cache-write", "output"}
	hostKeys     = []string{"prompt", "model"}
	boardKeys    = []string{"nats"}
	taskKeys     = []string{"id", "goal", "assignee", "deps", "input"}
)

// LoadWorkflow loads a workflow file and runs the schema and the checks
// that need only this file (model form, script and skills paths, task
// shape). Tasks' references to skills, deps and cycles are Check's.
// The workflow is returned whenever the file parsed.
func LoadWorkflow(path string) (*Workflow, diag.List) {
	data, diags := readLimited(path, MaxWorkflowSize)
	if diags != nil {
		return nil, diags
	}
	return loadWorkflow(path, data)
}

func loadWorkflow(path string, data []byte) (*Workflow, diag.List) {
	root, diags := parseWorkflow(path, data)
	if diags != nil {
		return nil, diags
	}
	w := &Workflow{File: path, Dir: filepath.Dir(path)}
	return w, finish(schemas.KindWorkflow, root, path, func(d *decoder) {
		d.unknown = diag.Error
		decodeWorkflow(d, root, w)
	})
}

func decodeWorkflow(d *decoder, root *yaml.Node, w *Workflow) {
	for _, f := range d.fields(root, workflowKeys, &w.Node) {
		switch f.key {
		case "name":
			w.Name, _ = str(f.v)
		case "model":
			w.Model = decodeModel(d, f.v)
		case "script":
			if s, ok := str(f.v); ok {
				w.Script = s
				if _, err := os.Stat(w.ScriptPath()); err != nil {
					d.errorf(f.v, "path", "script %q: %s", s, ioMessage(err))
				}
			}
		case "skills":
			w.SkillsSet = true
			w.Skills, w.SkillsPos = d.strList(f.v)
			for i, s := range w.Skills {
				if _, err := os.Stat(ExpandPath(s, w.Dir)); err != nil {
					d.diags = append(d.diags, diag.Errorf(w.SkillsPos[i], "path", "skills %q: %s", s, ioMessage(err)))
				}
			}
		case "enabled":
			w.EnabledSet = true
			w.Enabled, w.EnabledPos = d.strList(f.v)
		case "channel":
			c, _ := str(f.v)
			w.Channel = Channel(c)
		case "preview":
			w.Preview = decodePreview(f.v)
		case "workspace":
			w.Workspace, _ = str(f.v)
		case "tools":
			decodeWorkflowTools(d, f, w)
		case "readers":
			s, _ := str(f.v)
			w.Readers = Readers(s)
		case "window-shed":
			s, _ := str(f.v)
			w.WindowShed = WindowShed(s)
		case "approve":
			w.Approve = decodeApprove(d, f.v)
		case "sandbox":
			w.Sandbox = decodeSandbox(d, f.v, true)
			checkSandboxPaths(d, w)
		case "cache":
			// on (default), off or per-run; YAML booleans are taken too.
			if s, ok := str(f.v); ok {
				w.NoCache, w.CachePerRun = s == cacheOff, s == cachePerRun
			} else if b, ok := boolean(f.v); ok {
				w.NoCache = !b
			}
		case "durability":
			// step or commit-before-effects (the schema checks which).
			s, _ := str(f.v)
			w.Durability = Durability(s)
		case "strict":
			w.Strict, _ = boolean(f.v)
		case "limits":
			decodeLimits(d, f.v, &w.Limits)
		case "prices":
			w.Prices = decodePrices(d, f.v)
		case "board":
			b := &BoardConfig{}
			for _, bf := range d.fields(f.v, boardKeys, &b.Node) {
				if bf.key == "nats" {
					// What it means, and whether it is right, is the
					// transport's (natsboard.CheckWorkflow).
					b.NATS, _ = str(bf.v)
				}
			}
			w.Board = b
		case "host":
			h := &Host{}
			for _, hf := range d.fields(f.v, hostKeys, &h.Node) {
				switch hf.key {
				case "prompt":
					h.Prompt, _ = str(hf.v)
				case "model":
					h.Model = decodeModel(d, hf.v)
				}
			}
			w.Host = h
		case "tasks":
			decodeTasks(d, f.v, w)
		case "input":
			w.Input, _ = str(f.v)
		}
	}
	if w.Model == "scripted" && w.Script == "" {
		if !w.Has("script") {
			d.diags = append(d.diags, diag.Diagnostic{Pos: w.At("model"), Kind: "value",
				Message: "model: scripted needs script: the file of scripted responses",
				Hint:    "add script: NAME.script.yaml (see fsd schema script), or name a provider model such as openai/gpt-5.4-mini"})
		}
	}
	if w.Host == nil && len(w.Tasks) == 0 && w.Pos.Line > 0 {
		d.diags = append(d.diags, diag.Diagnostic{Pos: w.Pos, Kind: "value",
			Message: "the workflow has neither host nor tasks: nothing would run",
			Hint:    "add host: for a conversation, or tasks: for a pipeline"})
	}
}

// decodeModel reads a `model:` of a workflow, host or agent: one model
// string, or a fallback chain as a list of them, each entry checked at
// its own line and column.
func decodeModel(d *decoder, n *yaml.Node) string {
	if m := deref(n); m != nil && m.Kind == yaml.SequenceNode {
		models, _ := d.strList(m)
		for i, e := range m.Content {
			if i >= len(models) {
				break
			}
			checkModel(d, e, models[i], true)
			if slices.Contains(models[:i], models[i]) {
				d.errorf(e, "value", "model %q is named twice in the fallback chain", models[i])
			}
		}
		return strings.Join(models, model.ChainSep)
	}
	m, _ := str(n)
	checkModel(d, n, m, false)
	return m
}

// checkModel accepts provider/model, scripted or standin (the stand-in
// model fsd eval's tests use, model/standin); the last two never in a
// chain. The provider must be one of model.ProviderNames, so that fsd
// validate refuses what fsd run would refuse before its first request;
// whether its key is set is the environment's to say, at run time.
func checkModel(d *decoder, n *yaml.Node, m string, inChain bool) {
	switch {
	case m == "":
		return
	case (m == "scripted" || m == "standin") && inChain:
		d.errorf(n, "value", "%s cannot be part of a fallback chain", m).Hint = "a chain names provider models, e.g. [anthropic/claude-sonnet-4-5, openai/gpt-5.4-mini]"
		return
	case m == "scripted" || m == "standin":
		return
	case strings.Contains(m, model.ChainSep):
		d.errorf(n, "value", "model %q names several models in one string", m).Hint = "a fallback chain is a list: model: [" + strings.Join(model.Chain(m), ", ") + "]"
		return
	}
	provider, name, ok := strings.Cut(m, "/")
	if !ok || provider == "" || name == "" || strings.ContainsAny(name, " \t") {
		d.errorf(n, "value", "model %q is not provider/model or scripted", m).Hint = "for example openai/gpt-5.4-mini, anthropic/claude-sonnet-4-5 or scripted"
		return
	}
	if !model.IsProvider(provider) {
		known := append(model.ProviderNames(), "scripted")
		hint := "known: " + strings.Join(known, ", ")
		if dym := diag.DidYouMean(provider, known, nil); dym != "" {
			hint = dym + " (" + hint + ")"
		}
		d.errorf(n, "value", "model %q: unknown provider %q", m, provider).Hint = hint
	}
}

func decodeLimits(d *decoder, n *yaml.Node, l *Limits) {
	for _, f := range d.fields(n, limitsKeys, &l.Node) {
		if f.key == "agents" {
			l.Agents = decodeBudgets(d, f.v)
			continue
		}
		for _, lf := range limitFields {
			if lf.key == f.key {
				*lf.field(l), _ = integer(f.v)
			}
		}
	}
}

// decodeBudgets reads limits.agents: agent name → token budget.
func decodeBudgets(d *decoder, n *yaml.Node) map[string]Budget {
	var node Node
	out := map[string]Budget{}
	for _, f := range d.pairs(n, &node) {
		if f.key != DefaultWorkerName {
			if skill, agent, ok := strings.Cut(f.key, "/"); !ok || skill == "" || agent == "" {
				d.errorf(f.k, "ref", "limits.agents: %q is not skill/agent or %s", f.key, DefaultWorkerName).Hint =
					"name an agent as a task's assignee does (for example weekly-report/summarizer), or worker for the default worker"
			}
		}
		var b Budget
		for _, bf := range d.fields(f.v, budgetKeys, &b.Node) {
			v, _ := integer(bf.v)
			switch bf.key {
			case "max-input-tokens":
				b.MaxInputTokens = v
			case "max-output-tokens":
				b.MaxOutputTokens = v
			}
		}
		out[f.key] = b
	}
	return out
}

// decodePrices reads prices: model string → price per million tokens.
func decodePrices(d *decoder, n *yaml.Node) map[string]Price {
	var node Node
	out := map[string]Price{}
	for _, f := range d.pairs(n, &node) {
		checkModel(d, f.k, f.key, false)
		var p Price
		for _, pf := range d.fields(f.v, priceKeys, &p.Node) {
			v, ok := number(pf.v)
			if !ok {
				continue // the schema reports it
			}
			switch pf.key {
			case "input":
				p.Input = v
			case "cached-input":
				p.CachedInput = &v
			case "cache-write":
				p.CacheWrite = &v
			case "output":
				p.Output = v
			}
		}
		out[f.key] = p
	}
	return out
}

func decodeTasks(d *decoder, n *yaml.Node, w *Workflow) {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return
	}
	// Sized once: a workflow of 100,000 tasks keeps this slice for the
	// whole run, and growing it by appends would copy it and leave it
	// up to a quarter empty.
	if len(n.Content) > 0 {
		w.Tasks = make([]Task, 0, len(n.Content))
	}
	var buf []field // one for every task's keys
	for _, e := range n.Content {
		var t Task
		var goal, input *yaml.Node
		buf = d.fieldsIn(buf, e, taskKeys, &t.Node)
		for _, f := range buf {
			switch f.key {
			case "id":
				t.ID, _ = str(f.v)
			case "goal":
				t.Goal, _ = str(f.v)
				goal = f.v
			case "assignee":
				t.Assignee, _ = str(f.v)
				if t.Assignee != "" {
					skill, agent, ok := strings.Cut(t.Assignee, "/")
					if !ok || skill == "" || agent == "" {
						d.errorf(f.v, "ref", "assignee %q is not skill/agent", t.Assignee).Hint = "for example weekly-report/summarizer; omit assignee for the default worker"
					}
				}
			case "deps":
				t.Deps, t.DepsPos = d.strList(f.v)
			case "input":
				t.Input, _ = str(f.v)
				input = f.v
			}
		}
		if goal != nil {
			checkTaskTemplate(d, goal, "goal", t.Deps)
		}
		if input != nil {
			checkTaskTemplate(d, input, "input", t.Deps)
		}
		w.Tasks = append(w.Tasks, t)
	}
}
