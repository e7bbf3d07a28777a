package schemas

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/internal/fanout"
)

func TestSchemasCompile(t *testing.T) {
	for _, kind := range []string{KindSkill, KindSkillMD, KindWorkflow, KindScript, KindEval} {
		if _, err := Compiled(kind); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
	}
	if _, err := Compiled("nope"); err == nil {
		t.Errorf("unknown kind compiled")
	}
}

// TestDescriptions: editors show a property's description as help, so
// every property of every schema has one (directly or through its $ref).
func TestDescriptions(t *testing.T) {
	for name, data := range map[string][]byte{"skill": Skill(), "workflow": Workflow()} {
		var doc any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var walk func(path string, v any)
		walk = func(path string, v any) {
			m, ok := v.(map[string]any)
			if !ok {
				return
			}
			if props, ok := m["properties"].(map[string]any); ok {
				for k, p := range props {
					pm, _ := p.(map[string]any)
					_, hasDesc := pm["description"]
					_, hasRef := pm["$ref"]
					if !hasDesc && !hasRef {
						t.Errorf("%s: %s.%s has no description", name, path, k)
					}
				}
			}
			for k, child := range m {
				walk(path+"."+k, child)
			}
		}
		walk(name, doc)
	}
}

func TestValidatePositions(t *testing.T) {
	src := "id: x\nname: X\ndescription: d\nversion: 1.0.0\ntools:\n  - name: t\n    run: {reply: 5}\n"
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	got := Validate(KindSkill, &doc, "x.skill.yaml")
	var lines []string
	for _, d := range got {
		lines = append(lines, d.String())
	}
	want := []string{"x.skill.yaml:7:18: tools[0].run.reply: expected string, got number [schema]"}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestValueAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatal(err)
	}
	if _, err := Value(&doc); err == nil || !strings.Contains(err.Error(), "alias") {
		t.Errorf("alias bomb: err = %v", err)
	}
}

// Text reached through aliases is bounded too, not only nodes: a few
// aliases of a large string stop at the alias that passes MaxAliasBytes.
func TestValueAliasBytes(t *testing.T) {
	src := "big: &big " + strings.Repeat("x", MaxAliasBytes/3) + "\nuses: [*big, *big, *big, *big]\n"
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	_, err := Value(&doc)
	ve, ok := err.(*ValueError)
	// The fourth alias (column 26) passes the bound: three fit.
	if !ok || ve.Node.Line != 2 || ve.Node.Column != 26 || !strings.Contains(ve.Msg, "aliases repeat more than") || ve.Hint == "" {
		t.Fatalf("err = %#v", err)
	}
}

// compiledKinds lists the kinds, or fragments of their schemas, compiled
// so far, sorted: "workflow", "skill#/$defs/props".
func compiledKinds() []string {
	compiler.mu.Lock()
	defer compiler.mu.Unlock()
	var kinds []string
	for url := range compiler.byURL {
		name := strings.TrimPrefix(url, Base)
		for kind, file := range files {
			if rest, ok := strings.CutPrefix(name, file); ok {
				name = kind + rest
			}
		}
		kinds = append(kinds, name)
	}
	slices.Sort(kinds)
	return kinds
}

// TestCompilesOnlyWhatIsValidated (Z1): a kind's schema is compiled when a
// document of that kind is first judged by the validator, once, and no
// other kind with it — the workflow's schema refers to the skill's, which
// is loaded for it but not compiled as a kind of its own until a skill
// goes to the validator.
func TestCompilesOnlyWhatIsValidated(t *testing.T) {
	forget()
	defer forget()
	if got := compiledKinds(); len(got) != 0 {
		t.Fatalf("compiled before any validation: %v", got)
	}
	steps := []struct {
		kind, src string
		want      []string
	}{
		{KindWorkflow, "name: w\ntasks: 1\n", []string{KindWorkflow}},
		{KindWorkflow, "name: v\ntasks: 2\n", []string{KindWorkflow}},
		{KindSkill, "id: x\nname: 1\n", []string{KindSkill, KindWorkflow}},
	}
	var first *jsonschema.Schema
	for i, s := range steps {
		if len(Validate(s.kind, yamlDoc(t, s.src), "x.yaml")) == 0 {
			t.Fatalf("%s #%d: no error", s.kind, i)
		}
		if diff := cmp.Diff(s.want, compiledKinds()); diff != "" {
			t.Errorf("after validating %s #%d (-want +got):\n%s", s.kind, i, diff)
		}
		if s.kind == KindWorkflow {
			got, err := Compiled(KindWorkflow)
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = got
			} else if got != first {
				t.Errorf("the workflow schema was compiled twice")
			}
		}
	}
}

// TestValidRunCompilesNothing (Z3): a run's valid manifests — a fan-out
// workflow, its skill and its script, and the repository's examples —
// are judged by the walk alone, without compiling any schema.
func TestValidRunCompilesNothing(t *testing.T) {
	forget()
	defer forget()
	docs := map[string][]string{
		KindWorkflow: {fanout.Workflow(10), "name: w\nsandbox: {network: [example.com]}\ntools: [Bash, Read]\ntasks: []\n"},
		KindSkill: {"id: fan\nname: Fan\ndescription: d\nversion: 1.0.0\ninstructions: i\n" +
			"agents:\n  worker: {description: w, prompt: p, max-steps: 2, item-visibility: sub, flow: deps, output: text}\n" +
			"tools:\n  - {name: t, description: d, run: {command: [echo], timeout: 1s, env: [A_B]}}\n" +
			"sandbox: {network: on}\n"},
		KindScript: {"agents:\n  worker: [{say: 'done {{.Task.ID}}'}]\n  joiner: [{say: joined, sleep: 1ms}]\n"},
	}
	for kind, srcs := range docs {
		for _, src := range srcs {
			if d := Validate(kind, yamlDoc(t, src), "x.yaml"); len(d) > 0 {
				t.Fatalf("%s: %v", kind, d)
			}
		}
	}
	if got := compiledKinds(); len(got) != 0 {
		t.Errorf("a valid run compiled %v", got)
	}
}

// forget drops every compiled schema and the walk's rules, as a new
// process starts without any.
func forget() {
	compiler.mu.Lock()
	defer compiler.mu.Unlock()
	compiler.c, compiler.byURL, compiler.errs = nil, nil, nil
	embeddedRules.mu.Lock()
	defer embeddedRules.mu.Unlock()
	embeddedRules.docs, embeddedRules.rules = map[string]any{}, map[string]*rule{}
}

// BenchmarkCompile is what a cold fsd run pays to compile the schemas it
// validates against (the workflow's, which refers to the skill's, and the
// scripted model's script), and every kind for comparison.
func BenchmarkCompile(b *testing.B) {
	for _, c := range []struct {
		name  string
		kinds []string
	}{
		{"run", []string{KindWorkflow, KindSkill, KindScript}},
		{"all", []string{KindSkill, KindSkillMD, KindWorkflow, KindScript, KindEval}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				forget()
				for _, kind := range c.kinds {
					if _, err := Compiled(kind); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
