package schemas

import (
	"bytes"
	_ "embed"
	"fmt"
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
	skillJSON []byte
	//go:embed skill-md.schema.json
	skillMDJSON []byte
	//go:embed workflow.schema.json
	workflowJSON []byte
	//go:embed script.schema.json
	scriptJSON []byte
	//go:embed eval.schema.json
	evalJSON []byte
)

// Base is where the schemas are published; their $id values start with it.
const Base = "https://raw.githubusercontent.com/fsdrun/fsd/main/schemas/"

// Skill returns the skill manifest schema.
func Skill() []byte { return bytes.Clone(skillJSON) }

// SkillMD returns the SKILL.md frontmatter schema. It refers to Skill's.
func SkillMD() []byte { return bytes.Clone(skillMDJSON) }

// Workflow returns the workflow schema.
func Workflow() []byte { return bytes.Clone(workflowJSON) }

// Script returns the scripted model's script schema.
func Script() []byte { return bytes.Clone(scriptJSON) }

// Eval returns the schema of fsd eval's suites.
func Eval() []byte { return bytes.Clone(evalJSON) }

// compiled holds the schemas, compiled once: a compiled schema is
// immutable and safe for concurrent use, so one copy serves every call.
type compiled struct {
	byKind map[string]*jsonschema.Schema
	err    error
}

var compileOnce = sync.OnceValue(func() compiled {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	files := map[string][]byte{
		"skill.schema.json":    skillJSON,
		"skill-md.schema.json": skillMDJSON,
		"workflow.schema.json": workflowJSON,
		"script.schema.json":   scriptJSON,
		"eval.schema.json":     evalJSON,
	}
	for name, data := range files {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return compiled{err: fmt.Errorf("schema %s: %w", name, err)}
		}
		if err := c.AddResource(Base+name, doc); err != nil {
			return compiled{err: fmt.Errorf("schema %s: %w", name, err)}
		}
	}
	out := compiled{byKind: map[string]*jsonschema.Schema{}}
	for kind, name := range map[string]string{
		KindSkill:    "skill.schema.json",
		KindSkillMD:  "skill-md.schema.json",
		KindWorkflow: "workflow.schema.json",
		KindScript:   "script.schema.json",
		KindEval:     "eval.schema.json",
	} {
		s, err := c.Compile(Base + name)
		if err != nil {
			return compiled{err: fmt.Errorf("compile %s: %w", name, err)}
		}
		out.byKind[kind] = s
	}
	return out
})

// Compiled returns the compiled schema of kind, compiling all of them on
// first use. An error means the embedded schemas are broken: a bug in fsd.
func Compiled(kind string) (*jsonschema.Schema, error) {
	c := compileOnce()
	if c.err != nil {
		return nil, c.err
	}
	s, ok := c.byKind[kind]
	if !ok {
		return nil, fmt.Errorf("unknown schema kind %q (want %s, %s, %s, %s or %s)", kind, KindSkill, KindSkillMD, KindWorkflow, KindScript, KindEval)
	}
	return s, nil
}

// Validate checks the YAML document root against the schema of kind and
// returns one diagnostic per problem, positioned at the YAML value the
// problem is about, kind "schema". Errors about unknown keys are left out
// (see the package doc). root may be a document node or its content.
func Validate(kind string, root *yaml.Node, file string) diag.List {
	s, err := Compiled(kind)
	if err != nil {
		return diag.List{diag.Errorf(diag.Pos{File: file, Line: 1, Col: 1}, "internal", "%v", err)}
	}
	if root != nil && root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
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
	collect(ve, nil, root, file, &out)
	out.Sort()
	return out.Dedupe()
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
