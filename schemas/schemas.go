package schemas

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/diag"
)

// The kinds Validate accepts.
const (
	KindSkill    = "skill"    // *.skill.yaml, skill.yaml
	KindSkillMD  = "skill-md" // the frontmatter of a SKILL.md
	KindWorkflow = "workflow" // *.workflow.yaml, workflow.yaml
	KindScript   = "script"   // *.script.yaml, the scripted model's script
	KindEval     = "eval"     // *.eval.yaml, an fsd eval suite
)

var (
	//go:embed skill.schema.json
	skillJSON string
	//go:embed skill-md.schema.json
	skillMDJSON string
	//go:embed workflow.schema.json
	workflowJSON string
	//go:embed script.schema.json
	scriptJSON string
	//go:embed eval.schema.json
	evalJSON string
)

// Base is where the schemas are published; their $id values start with it.
const Base = "https://raw.githubusercontent.com/fsdrun/fsd/main/schemas/"

// Skill returns the skill manifest schema.
func Skill() []byte { return []byte(skillJSON) }

// SkillMD returns the SKILL.md frontmatter schema. It refers to Skill's.
func SkillMD() []byte { return []byte(skillMDJSON) }

// Workflow returns the workflow schema.
func Workflow() []byte { return []byte(workflowJSON) }

// Script returns the scripted model's script schema.
func Script() []byte { return []byte(scriptJSON) }

// Eval returns the schema of fsd eval's suites.
func Eval() []byte { return []byte(evalJSON) }

// files maps each kind to its schema's file name under Base.
var files = map[string]string{
	KindSkill:    "skill.schema.json",
	KindSkillMD:  "skill-md.schema.json",
	KindWorkflow: "workflow.schema.json",
	KindScript:   "script.schema.json",
	KindEval:     "eval.schema.json",
}

// embedded returns the embedded schema named file. The schemas are
// strings, so what the walk's rules decode from them shares their bytes.
func embedded(file string) (string, bool) {
	switch file {
	case "skill.schema.json":
		return skillJSON, true
	case "skill-md.schema.json":
		return skillMDJSON, true
	case "workflow.schema.json":
		return workflowJSON, true
	case "script.schema.json":
		return scriptJSON, true
	case "eval.schema.json":
		return evalJSON, true
	}
	return "", false
}

// compiler compiles the schemas a process validates against, each only
// when first asked for: compiling is most of what a short command such as
// a one-task fsd run would cost above the runtime's own start (the
// library checks every schema against the 2020-12 meta-schema), so a run
// whose manifests the walk accepts compiles none (Z3) and fsd version
// compiles none. One jsonschema.Compiler serves every kind, so a schema
// another refers to (the workflow's to the skill's) is loaded and checked
// once; it is not safe for concurrent use, hence mu. A compiled schema is
// immutable and safe for concurrent use, so one copy serves every call.
var compiler struct {
	mu    sync.Mutex
	c     *jsonschema.Compiler
	byURL map[string]*jsonschema.Schema
	errs  map[string]error
}

// compile returns kind's compiled schema, compiling it on first use (Z1).
func compile(kind string) (*jsonschema.Schema, error) {
	file, ok := files[kind]
	if !ok {
		return nil, fmt.Errorf("unknown schema kind %q (want %s, %s, %s, %s or %s)", kind, KindSkill, KindSkillMD, KindWorkflow, KindScript, KindEval)
	}
	s, err := compileURL(Base + file)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", file, err)
	}
	return s, nil
}

// compileURL compiles the schema at url, one of fsd's files or a
// fragment of one, once.
func compileURL(url string) (*jsonschema.Schema, error) {
	compiler.mu.Lock()
	defer compiler.mu.Unlock()
	if s, ok := compiler.byURL[url]; ok {
		return s, nil
	}
	if err, ok := compiler.errs[url]; ok {
		return nil, err
	}
	if compiler.c == nil {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.UseLoader(embeddedLoader{})
		c.UseRegexpEngine(memoRegexp())
		compiler.c = c
		compiler.byURL = map[string]*jsonschema.Schema{}
		compiler.errs = map[string]error{}
	}
	s, err := compiler.c.Compile(url)
	if err != nil {
		compiler.errs[url] = err
		return nil, err
	}
	compiler.byURL[url] = s
	return s, nil
}

// embeddedLoader loads the schemas under Base from the binary, decoding
// each only when a compile first reaches it.
type embeddedLoader struct{}

func (embeddedLoader) Load(url string) (any, error) {
	name, ok := strings.CutPrefix(url, Base)
	data, found := embedded(name)
	if !ok || !found {
		return nil, fmt.Errorf("%s is not one of fsd's schemas", url)
	}
	return jsonschema.UnmarshalJSON(strings.NewReader(data))
}

// memoRegexp compiles each pattern once per compiler: the library
// compiles a schema's pattern twice, once checking the schema against the
// meta-schema (whose format "regex" it asserts) and once for the keyword.
// A *regexp.Regexp is safe for concurrent use, and a compile error is the
// same for the same pattern.
func memoRegexp() jsonschema.RegexpEngine {
	type result struct {
		re  *regexp.Regexp
		err error
	}
	var mu sync.Mutex
	seen := map[string]result{}
	return func(pattern string) (jsonschema.Regexp, error) {
		mu.Lock()
		defer mu.Unlock()
		r, ok := seen[pattern]
		if !ok {
			r.re, r.err = regexp.Compile(pattern)
			seen[pattern] = r
		}
		if r.err != nil {
			return nil, r.err
		}
		return r.re, nil
	}
}

// Compiled returns the compiled schema of kind, compiling it on first
// use. An error means the embedded schemas are broken: a bug in fsd.
func Compiled(kind string) (*jsonschema.Schema, error) { return compile(kind) }

// Validate checks the YAML document root against the schema of kind and
// returns one diagnostic per problem, positioned at the YAML value the
// problem is about, kind "schema". Errors about unknown keys are left out
// (see the package doc). root may be a document node or its content.
func Validate(kind string, root *yaml.Node, file string) diag.List {
	if root != nil && root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if r, err := rulesOf(kind); err == nil && accepts(r, root) {
		return nil
	}
	s, err := Compiled(kind)
	if err != nil {
		return diag.List{diag.Errorf(diag.Pos{File: file, Line: 1, Col: 1}, "internal", "%v", err)}
	}
	v, err := Value(root)
	if err != nil {
		return diag.List{ErrorAt(err, file)}
	}
	verr := s.Validate(v)
	if verr == nil {
		return nil
	}
	ve, ok := verr.(*jsonschema.ValidationError)
	if !ok {
		return diag.List{diag.Errorf(pos(root, file), "schema", "%v", verr)}
	}
	var out diag.List
	collect(ve, nil, root, file, &keyIndex{}, &out)
	out.Sort()
	return out.Dedupe()
}

// rulesOf returns the walk's rules of kind's schema.
func rulesOf(kind string) (*rule, error) {
	file, ok := files[kind]
	if !ok {
		return nil, fmt.Errorf("unknown schema kind %q", kind)
	}
	return embeddedRules.root(file)
}

// ErrorAt turns a Value error into a diagnostic at its node in file.
func ErrorAt(err error, file string) diag.Diagnostic {
	if ve, ok := err.(*ValueError); ok {
		d := diag.Errorf(pos(ve.Node, file), "yaml", "%s", ve.Msg)
		d.Hint = ve.Hint
		return d
	}
	return diag.Errorf(diag.Pos{File: file, Line: 1, Col: 1}, "yaml", "%v", err)
}

func pos(n *yaml.Node, file string) diag.Pos {
	if n == nil {
		return diag.Pos{File: file, Line: 1, Col: 1}
	}
	return diag.Pos{File: file, Line: n.Line, Col: n.Column}
}
