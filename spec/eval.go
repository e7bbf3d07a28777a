package spec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/internal/lazyre"
	"github.com/fsdrun/fsd/output"
	"github.com/fsdrun/fsd/schemas"
)

// EvalSuite is what `fsd eval` runs against one workflow: trigger cases
// and outcome cases, from an fsd *.eval.yaml or read from skill-creator's
// files (a trigger set, an evals/evals.json).
type EvalSuite struct {
	Node
	File string
	// Workflow is the workflow's path: as written in a *.eval.yaml
	// (relative to File), or what the caller chose for a JSON file.
	Workflow string
	// Repeat, Threshold and Steps are the suite's settings; 0 and nil
	// leave them to the command's flags and defaults.
	Repeat    int
	Threshold *float64
	Steps     int
	// Judge is the model string that grades judge: assertions.
	Judge    string
	Triggers []TriggerCase
	Cases    []EvalCase
}

// WorkflowPath is the workflow's path, resolved against the suite's folder.
func (s *EvalSuite) WorkflowPath() string {
	if s.Workflow == "" || filepath.IsAbs(s.Workflow) || s.File == "" {
		return s.Workflow
	}
	return filepath.Join(filepath.Dir(s.File), s.Workflow)
}

// TriggerCase is one query and whether the host should read Skill for it.
type TriggerCase struct {
	Pos           diag.Pos
	Skill         string
	SkillPos      diag.Pos // where the suite names the skill
	Query         string
	ShouldTrigger bool
}

// EvalCase is one run of the workflow on Input, checked by Expect.
type EvalCase struct {
	Pos   diag.Pos
	ID    string
	Input string
	// Expected is skill-creator's expected_output: what success looks like,
	// for a reader of the report.
	Expected string
	// Files are copied into the run's workspace, each by its base name;
	// the paths are resolved (relative to the file that names them).
	Files  []string
	Expect []Assertion
}

// The kinds of assertions, as a *.eval.yaml names them.
const (
	AssertContains      = "contains"
	AssertRegex         = "regex"
	AssertEquals        = "equals"
	AssertJSONSchema    = "json-schema"
	AssertJSONPath      = "json-path"
	AssertToolCalled    = "tool-called"
	AssertToolNotCalled = "tool-not-called"
	AssertSkillRead     = "skill-read"
	AssertSkillNotRead  = "skill-not-read"
	AssertMaxTokens     = "max-tokens"
	AssertMaxCost       = "max-cost"
	AssertMaxSteps      = "max-steps"
	AssertJudge         = "judge"
)

// AssertionKinds lists every assertion kind; the eval schema's assertion
// keys are held to it.
var AssertionKinds = []string{AssertContains, AssertRegex, AssertEquals, AssertJSONSchema, AssertJSONPath,
	AssertToolCalled, AssertToolNotCalled, AssertSkillRead, AssertSkillNotRead,
	AssertMaxTokens, AssertMaxCost, AssertMaxSteps, AssertJudge}

// Assertion is one check of a run. Text is the kind's string (the text,
// pattern, tool name, skill id or rubric); the other fields serve the
// kinds that need them.
type Assertion struct {
	Pos  diag.Pos
	Kind string
	Text string
	// Args are the arguments a tool call must include (tool-called,
	// tool-not-called); nil: any.
	Args map[string]any
	// Schema is json-schema's schema.
	Schema map[string]any
	// Path and Value are json-path's.
	Path  string
	Value any
	// Limit is max-tokens', max-cost's and max-steps' bound.
	Limit float64
}

// String is how a report names the assertion: its kind and argument.
func (a Assertion) String() string {
	switch a.Kind {
	case AssertJSONSchema:
		return a.Kind
	case AssertJSONPath:
		v, _ := jsonText(a.Value)
		return fmt.Sprintf("%s %s = %s", a.Kind, a.Path, v)
	case AssertMaxTokens, AssertMaxCost, AssertMaxSteps:
		return fmt.Sprintf("%s %s", a.Kind, strconv.FormatFloat(a.Limit, 'f', -1, 64))
	case AssertToolCalled, AssertToolNotCalled:
		if a.Args != nil {
			v, _ := jsonText(a.Args)
			return fmt.Sprintf("%s %s %s", a.Kind, a.Text, v)
		}
	}
	return a.Kind + " " + strconv.Quote(a.Text)
}

// DefaultEvalRepeat, DefaultEvalThreshold: skill-creator's run_eval.py
// defaults (3 runs per query, a 0.5 trigger threshold).
const (
	DefaultEvalRepeat    = 3
	DefaultEvalThreshold = 0.5
)

var (
	evalKeys      = []string{"workflow", "repeat", "threshold", "steps", "judge", "triggers", "cases"}
	triggerKeys   = []string{"query", "should-trigger", "file"}
	evalCaseKeys  = []string{"id", "input", "files", "expect", "file"}
	callMatchKeys = []string{"name", "args"}
	jsonPathKeys  = []string{"path", "equals"}
	jsonPathRE    = lazyre.New(`^\$((\.[^.\[\]]+)|(\[[0-9]+\]))*$`)
)

// IsEvalFile reports whether a file is an fsd eval suite.
func IsEvalFile(name string) bool {
	base := filepath.Base(name)
	return strings.HasSuffix(base, ".eval.yaml") || strings.HasSuffix(base, ".eval.yml")
}

// LoadEval loads an fsd *.eval.yaml with the skill-creator files it names,
// and checks it as `fsd validate` does: the eval schema (`fsd schema
// eval`), unknown keys, regular expressions, schemas and paths, and that
// every skill named is in the workflow's catalog, each problem at its
// file:line:col (V10).
func LoadEval(path string) (*EvalSuite, diag.List) {
	data, diags := readFile(path)
	if diags != nil {
		return nil, diags
	}
	root, diags := parseYAML(path, data)
	if diags != nil {
		return nil, diags
	}
	s := &EvalSuite{File: path}
	diags = finish(schemas.KindEval, root, path, func(d *decoder) { decodeEval(d, root, s) })
	diags = append(diags, CheckEvalSkills(s)...)
	diags.Sort()
	if diags.Errors(false) != nil {
		return nil, diags
	}
	return s, diags
}

func decodeEval(d *decoder, root *yaml.Node, s *EvalSuite) {
	dir := filepath.Dir(s.File)
	for _, f := range d.fields(root, evalKeys, &s.Node) {
		switch f.key {
		case "workflow":
			s.Workflow, _ = str(f.v)
			if _, err := os.Stat(s.WorkflowPath()); err != nil && s.Workflow != "" {
				d.errorf(f.v, "path", "workflow %s: %s", s.Workflow, ioMessage(err))
			}
		case "repeat":
			s.Repeat, _ = integer(f.v)
		case "threshold":
			if v, ok := number(f.v); ok {
				s.Threshold = &v
			}
		case "steps":
			s.Steps, _ = integer(f.v)
		case "judge":
			s.Judge, _ = str(f.v)
			checkModel(d, f.v, s.Judge, false)
		case "triggers":
			var names Node
			for _, p := range d.pairs(f.v, &names) {
				seq := deref(p.v)
				if seq == nil || seq.Kind != yaml.SequenceNode {
					continue
				}
				before := len(s.Triggers)
				for _, e := range seq.Content {
					decodeTrigger(d, e, p.key, dir, s)
				}
				for i := before; i < len(s.Triggers); i++ {
					s.Triggers[i].SkillPos = d.pos(p.k)
				}
			}
		case "cases":
			seq := deref(f.v)
			if seq == nil || seq.Kind != yaml.SequenceNode {
				continue
			}
			seen := map[string]diag.Pos{}
			for _, e := range seq.Content {
				before := len(s.Cases)
				decodeCase(d, e, dir, s)
				for _, c := range s.Cases[before:] {
					if prev, dup := seen[c.ID]; dup {
						d.diags = append(d.diags, diag.Errorf(c.Pos, "duplicate", "case id %q is used twice (first at %s)", c.ID, prev))
					}
					seen[c.ID] = c.Pos
				}
			}
		}
	}
}

func decodeTrigger(d *decoder, e *yaml.Node, skill, dir string, s *EvalSuite) {
	var n Node
	t := TriggerCase{Skill: skill, ShouldTrigger: true}
	file := ""
	var fileNode *yaml.Node
	for _, f := range d.fields(e, triggerKeys, &n) {
		switch f.key {
		case "query":
			t.Query, _ = str(f.v)
			t.Pos = d.pos(f.v)
			if t.Query != "" && strings.TrimSpace(t.Query) == "" {
				// As in a trigger set: a run of it would measure the
				// catalog on no request at all ("" is the schema's).
				d.errorf(f.v, "format", "a trigger case's \"query\" must not be blank")
			}
		case "should-trigger":
			t.ShouldTrigger, _ = boolean(f.v)
		case "file":
			file, _ = str(f.v)
			fileNode = f.v
		}
	}
	if file == "" {
		if t.Query != "" {
			s.Triggers = append(s.Triggers, t)
		}
		return
	}
	set, diags := LoadTriggerSet(filepath.Join(dir, file), skill)
	if diags != nil {
		d.diags = append(d.diags, diag.Errorf(d.pos(fileNode), "file", "trigger set %s has problems", file))
		d.diags = append(d.diags, diags...)
		return
	}
	s.Triggers = append(s.Triggers, set...)
}

func decodeCase(d *decoder, e *yaml.Node, dir string, s *EvalSuite) {
	var n Node
	c := EvalCase{}
	file := ""
	var fileNode *yaml.Node
	hasExpect := false
	for _, f := range d.fields(e, evalCaseKeys, &n) {
		switch f.key {
		case "id":
			c.ID, _ = str(f.v)
		case "input":
			c.Input, _ = str(f.v)
		case "files":
			c.Files = caseFiles(d, f.v, dir, "")
		case "expect":
			hasExpect = true
			seq := deref(f.v)
			if seq == nil || seq.Kind != yaml.SequenceNode {
				continue
			}
			for _, a := range seq.Content {
				if as, ok := decodeAssertion(d, a); ok {
					c.Expect = append(c.Expect, as)
				}
			}
		case "file":
			file, _ = str(f.v)
			fileNode = f.v
		}
	}
	c.Pos = n.Pos
	if file == "" {
		if !hasExpect && c.ID != "" {
			// A case with no assertion passes whenever its run ends: the
			// report would claim a pass it never checked.
			d.errorf(deref(e), "expect", "case %q checks nothing; give it expect: assertions (a run that merely ends would pass)", c.ID)
		}
		s.Cases = append(s.Cases, c)
		return
	}
	cases, diags := LoadSkillCreatorEvals(filepath.Join(dir, file))
	if diags != nil {
		d.diags = append(d.diags, diag.Errorf(d.pos(fileNode), "file", "evals file %s has problems", file))
		d.diags = append(d.diags, diags...)
		return
	}
	s.Cases = append(s.Cases, cases...)
}

func decodeAssertion(d *decoder, e *yaml.Node) (Assertion, bool) {
	var n Node
	fields := d.fields(e, AssertionKinds, &n)
	if len(fields) > 1 {
		kinds := make([]string, len(fields))
		for i, f := range fields {
			kinds[i] = f.key
		}
		d.errorf(deref(e), "assertion", "an assertion is one key, its kind; this one has %d: %s", len(fields), strings.Join(kinds, ", ")).Hint = "write each as its own list item"
		return Assertion{}, false
	}
	for _, f := range fields {
		a := Assertion{Pos: d.pos(f.v), Kind: f.key}
		switch f.key {
		case AssertContains, AssertEquals, AssertSkillRead, AssertSkillNotRead, AssertJudge:
			a.Text, _ = str(f.v)
		case AssertRegex:
			a.Text, _ = str(f.v)
			if _, err := regexp.Compile(a.Text); err != nil {
				d.errorf(f.v, "regex", "regex %q: %v", a.Text, err).Hint = "Go's RE2 syntax: https://pkg.go.dev/regexp/syntax"
				return a, false
			}
		case AssertMaxTokens, AssertMaxSteps, AssertMaxCost:
			a.Limit, _ = number(f.v)
		case AssertJSONSchema:
			v, err := schemas.Value(f.v)
			if err != nil {
				d.diags = append(d.diags, schemas.ErrorAt(err, d.file))
				return a, false
			}
			a.Schema, _ = v.(map[string]any)
			if _, err := output.Compile("json-schema", a.Schema); err != nil {
				d.errorf(f.v, "schema", "json-schema: %v", err)
				return a, false
			}
		case AssertJSONPath:
			var pn Node
			for _, pf := range d.fields(f.v, jsonPathKeys, &pn) {
				switch pf.key {
				case "path":
					a.Path, _ = str(pf.v)
					if !jsonPathRE().MatchString(a.Path) {
						d.errorf(pf.v, "json-path", "path %q: want $ then .key or [index] steps, e.g. $.people[0].name", a.Path)
						return a, false
					}
				case "equals":
					a.Value, _ = schemas.Value(pf.v)
				}
			}
		case AssertToolCalled, AssertToolNotCalled:
			if name, ok := str(f.v); ok {
				a.Text = name
				break
			}
			var cn Node
			for _, cf := range d.fields(f.v, callMatchKeys, &cn) {
				switch cf.key {
				case "name":
					a.Text, _ = str(cf.v)
				case "args":
					v, _ := schemas.Value(cf.v)
					a.Args, _ = v.(map[string]any)
				}
			}
		}
		return a, true
	}
	return Assertion{}, false
}

// LoadTriggerSet reads a skill-creator trigger set for skill: a JSON array
// of {"query": "...", "should_trigger": true}. Other keys are left to
// the tools that wrote them.
func LoadTriggerSet(path, skill string) ([]TriggerCase, diag.List) {
	root, diags := readJSON(path)
	if diags != nil {
		return nil, diags
	}
	d := &decoder{file: path}
	if root.Kind != yaml.SequenceNode {
		return nil, diag.List{diag.Errorf(d.pos(root), "format", "a trigger set is a JSON array of {\"query\": ..., \"should_trigger\": ...}")}
	}
	var out []TriggerCase
	for _, e := range root.Content {
		var n Node
		t := TriggerCase{Skill: skill, Pos: d.pos(e)}
		has := map[string]bool{}
		for _, f := range d.fields(e, nil, &n) {
			switch f.key {
			case "query":
				t.Query, has["query"] = str(f.v)
				if has["query"] && strings.TrimSpace(t.Query) == "" {
					d.errorf(f.v, "format", "a trigger case's \"query\" must not be empty")
				}
			case "should_trigger":
				t.ShouldTrigger, has["should_trigger"] = boolean(f.v)
			}
		}
		for _, k := range []string{"query", "should_trigger"} {
			if !has[k] {
				d.errorf(e, "format", "a trigger case needs %q (a %s)", k, map[string]string{"query": "string", "should_trigger": "boolean"}[k])
			}
		}
		out = append(out, t)
	}
	if d.diags != nil {
		return nil, d.diags
	}
	return out, nil
}

// LoadSkillCreatorEvals reads a skill-creator evals/evals.json: each eval
// becomes a case "SKILL-ID" whose expectations (or assertions) become
// judge: assertions, or its expected_output one when it has none; its
// files are relative to the skill's folder (the folder above evals/).
func LoadSkillCreatorEvals(path string) ([]EvalCase, diag.List) {
	root, diags := readJSON(path)
	if diags != nil {
		return nil, diags
	}
	d := &decoder{file: path}
	skillDir := filepath.Dir(filepath.Dir(path))
	var n Node
	skill := ""
	var evals *yaml.Node
	for _, f := range d.fields(root, nil, &n) {
		switch f.key {
		case "skill_name":
			skill, _ = str(f.v)
		case "evals":
			evals = f.v
		}
	}
	if evals == nil || evals.Kind != yaml.SequenceNode {
		return nil, diag.List{diag.Errorf(d.pos(root), "format", `an evals.json is {"skill_name": ..., "evals": [{"id", "prompt", "expected_output", "files", "expectations"}]}`)}
	}
	var out []EvalCase
	for _, e := range evals.Content {
		var en Node
		c := EvalCase{Pos: d.pos(e)}
		for _, f := range d.fields(e, nil, &en) {
			switch f.key {
			case "id":
				if v, ok := scalarText(f.v); ok {
					c.ID = v
				}
			case "prompt":
				c.Input, _ = str(f.v)
			case "expected_output":
				c.Expected, _ = str(f.v)
			case "files":
				c.Files = caseFiles(d, f.v, skillDir, " (relative to the skill's folder "+skillDir+")")
			case "expectations", "assertions":
				seq := deref(f.v)
				if seq == nil || seq.Kind != yaml.SequenceNode {
					continue
				}
				for _, x := range seq.Content {
					text, ok := str(x)
					if !ok {
						// An object form: {"text": ...} or {"assertion": ...}.
						var xn Node
						for _, xf := range d.fields(x, nil, &xn) {
							if xf.key == "text" || xf.key == "assertion" {
								text, ok = str(xf.v)
							}
						}
					}
					if ok && text != "" {
						c.Expect = append(c.Expect, Assertion{Pos: d.pos(x), Kind: AssertJudge, Text: text})
					}
				}
			}
		}
		if c.Input == "" {
			d.errorf(e, "format", "an eval needs a \"prompt\"")
		}
		if len(c.Expect) == 0 && c.Expected != "" {
			c.Expect = []Assertion{{Pos: en.At("expected_output"), Kind: AssertJudge, Text: c.Expected}}
		}
		if len(c.Expect) == 0 && c.Input != "" {
			// Nothing to judge by: the case would pass whenever its run ends.
			d.errorf(e, "format", "an eval needs \"expectations\" or an \"expected_output\" to be judged by")
		}
		c.ID = caseID(skill, c.ID, len(out))
		out = append(out, c)
	}
	if d.diags != nil {
		return nil, d.diags
	}
	return out, nil
}

// caseFiles resolves a case's files: paths relative to dir, each a file
// that is there (where says relative to what, in the message).
func caseFiles(d *decoder, n *yaml.Node, dir, where string) []string {
	list, pos := d.strList(n)
	var out []string
	for i, rel := range list {
		full := filepath.Join(dir, rel)
		if st, err := os.Stat(full); err != nil || st.IsDir() {
			msg := "is a folder; name files"
			if err != nil {
				msg = ioMessage(err)
			}
			d.diags = append(d.diags, diag.Errorf(pos[i], "path", "file %s%s: %s", rel, where, msg))
		}
		out = append(out, full)
	}
	return out
}

// caseID names an evals.json case: the skill and the eval's id.
func caseID(skill, id string, i int) string {
	if id == "" {
		id = strconv.Itoa(i + 1)
	}
	if skill == "" {
		return "eval-" + id
	}
	return skill + "-" + id
}

// readJSON parses a JSON file with the YAML parser (JSON is YAML), so
// every value keeps its line and column.
func readJSON(path string) (*yaml.Node, diag.List) {
	data, diags := readFile(path)
	if diags != nil {
		return nil, diags
	}
	root, diags := parseDocument(path, data)
	if diags != nil {
		return nil, diags
	}
	return deref(root), nil
}

// CheckEvalSkills says where a suite's trigger cases or skill-read
// assertions name a skill its workflow's catalog lacks; fsd eval asks it
// of a trigger set given --skill as LoadEval asks it of a suite.
func CheckEvalSkills(s *EvalSuite) diag.List {
	if s.Workflow == "" {
		return nil
	}
	if _, err := os.Stat(s.WorkflowPath()); err != nil {
		return nil // reported at workflow:
	}
	p, pd := LoadProjectLenient(s.WorkflowPath())
	if p == nil || pd.Errors(false) != nil {
		return diag.List{diag.Errorf(s.At("workflow"), "workflow", "workflow %s does not load: %s", s.Workflow, firstError(pd))}
	}
	ids := map[string]bool{}
	var known []string
	for _, sk := range p.Skills {
		ids[sk.ID] = true
		known = append(known, sk.ID)
	}
	var out diag.List
	unknown := func(at diag.Pos, id string) {
		if !ids[id] {
			out = append(out, diag.Diagnostic{Pos: at, Severity: diag.Error, Kind: "skill",
				Message: fmt.Sprintf("skill %q is not in the workflow's catalog (%s)", id, s.Workflow), Hint: didYouMean(id, known)})
		}
	}
	seen := map[string]bool{}
	for _, t := range s.Triggers {
		if !seen[t.Skill] {
			seen[t.Skill] = true
			unknown(t.SkillPos, t.Skill)
		}
	}
	for _, c := range s.Cases {
		for _, a := range c.Expect {
			if a.Kind == AssertSkillRead || a.Kind == AssertSkillNotRead {
				unknown(a.Pos, a.Text)
			}
			if a.Kind == AssertMaxCost && len(p.Workflow.Prices) == 0 {
				// Without prices a run costs 0, so the bound held
				// whatever the run spent: a pass nothing measured.
				out = append(out, diag.Diagnostic{Pos: a.Pos, Severity: diag.Error, Kind: "prices",
					Message: fmt.Sprintf("max-cost: the workflow (%s) has no prices:, so every run would cost 0 and pass", s.Workflow),
					Hint:    "give the workflow prices: for its models, or bound max-tokens instead"})
			}
		}
	}
	return out
}

func firstError(l diag.List) string {
	if errs := l.Errors(false); len(errs) > 0 {
		return errs[0].String()
	}
	return "unknown problem"
}

// jsonText is v as compact JSON.
func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
