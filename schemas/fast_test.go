package schemas

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/internal/fanout"
)

// kindOf is the schema of a manifest file by its name; "" for none.
func kindOf(name string) string {
	base := filepath.Base(name)
	for _, k := range []struct{ suffix, kind string }{
		{"skill.yaml", KindSkill}, {"workflow.yaml", KindWorkflow}, {"script.yaml", KindScript}, {"eval.yaml", KindEval},
		{"skill.yml", KindSkill}, {"workflow.yml", KindWorkflow}, {"script.yml", KindScript}, {"eval.yml", KindEval},
	} {
		if base == k.suffix || strings.HasSuffix(base, "."+k.suffix) {
			return k.kind
		}
	}
	return ""
}

// manifests are the repository's manifests, good and bad, by kind.
func manifests(t *testing.T) map[string][]*yaml.Node {
	t.Helper()
	out := map[string][]*yaml.Node{}
	for _, root := range []string{"../spec/testdata", "../examples", "../scaffold", "../cmd/fsd/testdata", "../engine/testdata"} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			kind := kindOf(p)
			if kind == "" {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			var doc yaml.Node
			if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
				return nil
			}
			out[kind] = append(out[kind], doc.Content[0])
			return nil
		})
	}
	return out
}

// validatorSays is the validator's verdict on n alone.
func validatorSays(t *testing.T, kind string, n *yaml.Node) bool {
	s, err := Compiled(kind)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Value(n)
	return err == nil && s.Validate(v) == nil
}

// mutants are copies of n each changed in one place: a string made a
// number, emptied or made a mapping, a key dropped or an unknown one
// added, a list emptied — the kinds of mistake a schema is there to
// catch.
func mutants(n *yaml.Node, limit int) []*yaml.Node {
	var out []*yaml.Node
	var paths [][]int
	var walk func(n *yaml.Node, path []int)
	walk = func(n *yaml.Node, path []int) {
		paths = append(paths, append([]int(nil), path...))
		if len(path) > 32 {
			return // deep-nesting.skill.yaml: its depth is its own case
		}
		for i, c := range n.Content {
			walk(c, append(path, i))
		}
	}
	walk(n, nil)
	if stride := len(paths) / limit; stride > 1 {
		// A large document: places spread over all of it.
		var some [][]int
		for i := 0; i < len(paths); i += stride {
			some = append(some, paths[i])
		}
		paths = some
	}
	for _, p := range paths {
		for op := range 8 {
			if len(out) >= limit {
				return out
			}
			c, m := copyPath(n, p)
			switch {
			case op == 0 && m.Kind == yaml.ScalarNode:
				m.Value, m.Tag, m.Style = "7", "!!int", 0
			case op == 1 && m.Kind == yaml.ScalarNode:
				m.Value, m.Tag, m.Style = "", "!!str", yaml.DoubleQuotedStyle
			case op == 2 && m.Kind == yaml.ScalarNode:
				*m = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			case op == 3 && m.Kind == yaml.MappingNode && len(m.Content) >= 2:
				m.Content = m.Content[2:]
			case op == 4 && m.Kind == yaml.MappingNode:
				m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "zz-unknown"}, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "x"})
			case op == 5 && m.Kind == yaml.SequenceNode:
				m.Content = nil
			case op == 6 && len(p) > 0:
				// An alias to more text than aliases may repeat: the
				// converter refuses the document wherever it sits.
				*m = yaml.Node{Kind: yaml.AliasNode, Alias: bigScalar}
			case op == 7 && m.Kind == yaml.MappingNode:
				// The same under a key no schema describes.
				m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "zz-alias"}, &yaml.Node{Kind: yaml.AliasNode, Alias: bigScalar})
			default:
				continue
			}
			out = append(out, c)
		}
	}
	return out
}

var bigScalar = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: strings.Repeat("x", MaxAliasBytes+1), Anchor: "big"}

// copyPath copies n and the nodes on path below it, which share the rest
// with n; m is the copy of the node at path.
func copyPath(n *yaml.Node, path []int) (c, m *yaml.Node) {
	cp := *n
	cp.Content = append([]*yaml.Node(nil), n.Content...)
	if len(path) == 0 {
		return &cp, &cp
	}
	child, m := copyPath(n.Content[path[0]], path[1:])
	cp.Content[path[0]] = child
	return &cp, m
}

// F5: what accepts takes, the validator takes too: over the repository's
// manifests, good and bad, and mutants of each.
func TestAcceptsOnlyWhatValidates(t *testing.T) {
	all := manifests(t)
	if len(all[KindWorkflow]) < 10 || len(all[KindSkill]) < 10 {
		t.Fatalf("found %d workflows and %d skills; the corpus is too small to tell", len(all[KindWorkflow]), len(all[KindSkill]))
	}
	accepted, rejected, checked := 0, 0, 0
	for kind, docs := range all {
		r := rules(t, kind)
		for _, doc := range docs {
			for _, n := range append([]*yaml.Node{doc}, mutants(doc, 120)...) {
				checked++
				vd := r.check(n)
				if vd == maybe {
					continue
				}
				if vd == yes {
					accepted++
				} else {
					rejected++
				}
				// A no decides branches (if, oneOf, not), so it must be
				// the validator's verdict too.
				if valid := validatorSays(t, kind, n); valid != (vd == yes) {
					var b bytes.Buffer
					enc := yaml.NewEncoder(&b)
					_ = enc.Encode(n)
					t.Errorf("%s: the walk says %v, the validator %v:\n%s", kind, vd == yes, valid, b.String())
				}
			}
		}
	}
	t.Logf("%d documents, %d accepted, %d rejected", checked, accepted, rejected)
	if accepted < 300 || rejected < 300 {
		t.Errorf("accepted %d and rejected %d of %d documents: the walk is not being exercised", accepted, rejected, checked)
	}
}

// rules returns the walk's rules of kind's schema.
func rules(t testing.TB, kind string) *rule {
	t.Helper()
	r, err := rulesOf(kind)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// An alias anywhere leaves the document to the converter, which bounds
// what aliases expand to over the whole of it: under a key or an item no
// schema describes too.
func TestAcceptsNoAlias(t *testing.T) {
	for _, tc := range []struct{ schema, doc string }{
		{`{"type": "object", "properties": {"args": {"type": "object"}}}`, "say: &a x\nargs: {k: *a}\n"},
		{`{"type": "object", "additionalProperties": true}`, "say: &a x\nk: *a\n"},
		{`{"type": "object", "properties": {"list": {"type": "array"}}}`, "say: &a x\nlist: [*a]\n"},
		{`{"type": "object", "properties": {"any": true}}`, "say: &a x\nany: {k: *a}\n"},
		{`{"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}`, "say: &a 1\nn: *a\n"},
	} {
		s, _ := testRules(t, tc.schema)
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(tc.doc), &n); err != nil {
			t.Fatal(err)
		}
		if accepts(s, n.Content[0]) {
			t.Errorf("%s: accepted %q, which holds an alias", tc.schema, tc.doc)
		}
		// Without the alias it is accepted: the case is the alias.
		var plainDoc yaml.Node
		if err := yaml.Unmarshal([]byte(strings.NewReplacer("&a ", "", "*a", "1").Replace(tc.doc)), &plainDoc); err != nil {
			t.Fatal(err)
		}
		if !accepts(s, plainDoc.Content[0]) {
			t.Errorf("%s: did not accept %q without its alias", tc.schema, tc.doc)
		}
	}
}

// The walk takes a fan-out workflow without the validator: the bulk of a
// big workflow is what it is for.
func TestAcceptsFanout(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(fanout.Workflow(100)), &doc); err != nil {
		t.Fatal(err)
	}
	s := rules(t, KindWorkflow)
	if !accepts(s, doc.Content[0]) {
		t.Fatal("the fan-out workflow is not accepted")
	}
	tasks := doc.Content[0]
	for i := 0; i < len(tasks.Content); i += 2 {
		if tasks.Content[i].Value == "tasks" {
			tasks = tasks.Content[i+1]
			break
		}
	}
	allocs := testing.AllocsPerRun(5, func() { accepts(s.props["tasks"], tasks) })
	if allocs > 0 {
		t.Errorf("accepting 101 tasks made %v allocations, want none", allocs)
	}
}

// delegate's verdicts hold only where no keyword depends on the path
// taken to a value.
func TestNoDynamicRefs(t *testing.T) {
	for name, data := range map[string]string{"skill": skillJSON, "skill-md": skillMDJSON, "workflow": workflowJSON, "script": scriptJSON, "eval": evalJSON} {
		for _, kw := range []string{`"$dynamicRef"`, `"$recursiveRef"`} {
			if strings.Contains(data, kw) {
				t.Errorf("%s schema uses %s: accepts would have to stop delegating", name, kw)
			}
		}
	}
}

// BenchmarkValidateWorkflow validates a workflow of 1,000 tasks, as
// loading one does.
func BenchmarkValidateWorkflow(b *testing.B) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(fanout.Workflow(1000)), &doc); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if d := Validate(KindWorkflow, &doc, "fan.workflow.yaml"); len(d) > 0 {
			b.Fatal(d)
		}
	}
}
