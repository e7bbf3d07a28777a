package docs

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/internal/golden"
	"github.com/fsdrun/fsd/schemas"
	"github.com/fsdrun/fsd/spec"
)

// schemaPage is a page of docs/reference generated from one schema.
type schemaPage struct {
	kind, file, title string
	schema            func() []byte
}

// schemaPages are the pages generated from the schemas, in the order the
// index lists them. The schema of each kind is the page's only source:
// keys, types, defaults, values, descriptions and examples all come from
// it, and spec's tests hold its defaults and values to spec.Facts.
var schemaPages = []schemaPage{
	{schemas.KindSkill, "skill.md", "Skill manifest", schemas.Skill},
	{schemas.KindSkillMD, "skill-md.md", "SKILL.md frontmatter", schemas.SkillMD},
	{schemas.KindWorkflow, "workflow.md", "Workflow", schemas.Workflow},
	{schemas.KindScript, "script.md", "Scripted-model script", schemas.Script},
	{schemas.KindEval, "eval.md", "Eval suite", schemas.Eval},
}

// regenerate is the command that rewrites every generated reference page.
const regenerate = "go test ./docs ./cmd/fsd -run TestReferencePages -update"

// TestReferencePages: docs/reference holds, for every schema, the page
// rendered from it, and the index of the pages. A page that differs fails
// with the diff and the command that rewrites it. The CLI's page is
// rendered by cmd/fsd's test of the same name, which has the command tree.
func TestReferencePages(t *testing.T) {
	set := loadSchemas(t)
	for _, p := range schemaPages {
		t.Run(p.kind, func(t *testing.T) {
			got, problems := renderSchemaPage(set, p)
			for _, msg := range problems {
				t.Errorf("schemas/%s.schema.json: %s", p.kind, msg)
			}
			golden.CheckString(t, filepath.Join("reference", p.file), got)
		})
	}
	golden.CheckString(t, filepath.Join("reference", "README.md"), renderIndex(set))
}

// schemaSet is the schemas by file name, parsed as YAML nodes (JSON is
// YAML) so every mapping keeps the order the schema writes its keys in.
type schemaSet map[string]*yaml.Node

func loadSchemas(t *testing.T) schemaSet {
	t.Helper()
	set := schemaSet{}
	for _, p := range schemaPages {
		var doc yaml.Node
		if err := yaml.Unmarshal(p.schema(), &doc); err != nil {
			t.Fatalf("schema %s: %v", p.kind, err)
		}
		set[p.kind+".schema.json"] = doc.Content[0]
	}
	return set
}

// at is a schema node and the file it is in, so a $ref inside it resolves.
type at struct {
	file string
	n    *yaml.Node
}

func (a at) ok() bool { return a.n != nil }

// own returns the value of keyword kw written on a itself.
func (a at) own(kw string) at {
	if a.n == nil || a.n.Kind != yaml.MappingNode {
		return at{}
	}
	for i := 0; i+1 < len(a.n.Content); i += 2 {
		if a.n.Content[i].Value == kw {
			return at{a.file, a.n.Content[i+1]}
		}
	}
	return at{}
}

// ref returns the schema a's $ref points at.
func (s schemaSet) ref(a at) at {
	r := a.own("$ref")
	if !r.ok() {
		return at{}
	}
	file, ptr, _ := strings.Cut(r.n.Value, "#")
	if file == "" {
		file = a.file
	}
	n := s[file]
	for seg := range strings.SplitSeq(strings.TrimPrefix(ptr, "/"), "/") {
		if seg != "" {
			n = at{file, n}.own(seg).n
		}
	}
	return at{file, n}
}

// get returns keyword kw of a: written on a, or else on what a's $ref
// points at (a property's own description wins over its definition's).
func (s schemaSet) get(a at, kw string) at {
	for depth := 0; a.ok() && depth < 10; depth++ {
		if v := a.own(kw); v.ok() {
			return v
		}
		a = s.ref(a)
	}
	return at{}
}

// key is one key of a manifest as its reference page lists it.
type key struct {
	path     string // tools[].run.command
	schema   at
	required bool
	segs     []seg  // the path, for placing the example
	nested   bool   // keys nested in its value follow it
	same     string // the path of a key whose nested keys its value shares
}

// seg is one step of a key's path: a key (list: its value is a list and
// the path goes into an element) or a name chosen by the user.
type seg struct {
	key         string
	list        bool
	placeholder string
}

// walker lists a schema's keys. A definition the schema uses in several
// places (a script's steps) has its keys listed under the first key that
// uses it; the others point there.
type walker struct {
	s        schemaSet
	expanded map[string]string // definition ($ref) -> the key listing its keys
}

func (s schemaSet) walk(obj at) []key {
	w := &walker{s: s, expanded: map[string]string{}}
	return w.keys(obj, "", nil)
}

// keys lists the keys an object schema declares and, after each, the keys
// nested in it, depth first, in the order the schema writes them.
func (w *walker) keys(obj at, prefix string, segs []seg) []key {
	s := w.s
	var out []key
	required := s.strings(s.get(obj, "required"))
	for _, branch := range []at{obj, s.get(obj, "else")} {
		props := s.get(branch, "properties")
		if !props.ok() {
			continue
		}
		for i := 0; i+1 < len(props.n.Content); i += 2 {
			name := props.n.Content[i].Value
			k := key{path: prefix + name, schema: at{props.file, props.n.Content[i+1]},
				required: slices.Contains(required, name)}
			k.segs = append(slices.Clip(segs), seg{key: name})
			out = append(out, k)
			nested := w.nested(&out[len(out)-1])
			out[len(out)-1].nested = len(nested) > 0
			out = append(out, nested...)
		}
	}
	return out
}

// nested lists the keys inside k's value: an object's keys, those of a
// list's elements (path[]), or those of a mapping's values (path.<name>),
// which may be lists (path.<name>[]).
func (w *walker) nested(k *key) []key {
	s := w.s
	obj, suffix, segs := k.schema, ".", slices.Clone(k.segs)
	if !s.hasKeys(obj) {
		if vals := s.get(obj, "additionalProperties"); vals.ok() && vals.n.Kind == yaml.MappingNode {
			name := "name"
			if ex := s.get(s.get(obj, "propertyNames"), "examples"); ex.ok() && len(ex.n.Content) > 0 {
				name = ex.n.Content[0].Value
			}
			obj, suffix, segs = vals, ".<name>.", append(segs, seg{placeholder: name})
		}
		if items := s.get(obj, "items"); !s.hasKeys(obj) && s.hasKeys(items) {
			suffix = strings.TrimSuffix(suffix, ".") + "[]."
			obj = items
			if sg := &segs[len(segs)-1]; sg.placeholder == "" {
				sg.list = true
			} else {
				segs = append(segs[:len(segs)-1], seg{placeholder: sg.placeholder, list: true})
			}
		}
	}
	if !s.hasKeys(obj) {
		return nil
	}
	if r := obj.own("$ref"); r.ok() {
		id := r.file + r.n.Value
		if first, ok := w.expanded[id]; ok {
			k.same = first
			return nil
		}
		w.expanded[id] = k.path + strings.TrimSuffix(suffix, ".")
	}
	return w.keys(obj, k.path+suffix, segs)
}

func (s schemaSet) hasKeys(a at) bool {
	return s.get(a, "properties").ok() || s.get(s.get(a, "else"), "properties").ok()
}

func (s schemaSet) strings(a at) []string {
	var out []string
	if a.ok() {
		for _, c := range a.n.Content {
			out = append(out, c.Value)
		}
	}
	return out
}

// renderSchemaPage renders p's schema as a page: what the file is, a table
// of every key, then a section per key. problems name what the schema
// lacks for the page (a key without a description or an example).
func renderSchemaPage(set schemaSet, p schemaPage) (string, []string) {
	file := p.kind + ".schema.json"
	root := at{file, set[file]}
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- Generated from schemas/%s by `%s`. Edit the schema, not this page. -->\n\n", file, regenerate)
	fmt.Fprintf(&b, "# %s\n\n", p.title)
	fmt.Fprintf(&b, "%s\n\n", prose(set.get(root, "description").n.Value))
	fmt.Fprintf(&b, "The JSON Schema is [schemas/%s](../../schemas/%s); `fsd schema %s` prints it and `fsd validate` checks files against it. "+
		"[File formats](../formats.md) says how the files fit together.\n\n", file, file, p.kind)
	b.WriteString("A key's path says where it goes: `a.b` is the key `b` inside `a`, `a[]` is an element of the list `a`, " +
		"and `<name>` is a name you choose.\n\n")

	// A schema that extends another's keys (SKILL.md's frontmatter
	// extends a skill's) lists its own keys and links to the others.
	var keys []key
	inherited := at{}
	if props := root.own("properties"); props.ok() {
		keys = set.walk(at{file, root.n})
		inherited = set.ref(root)
	} else {
		keys = set.walk(root)
	}
	keys = withRequired(set, root, keys)

	var problems []string
	b.WriteString("| Key | Type | Required | Default |\n|---|---|---|---|\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s |\n", k.path, anchor(k.path), cell(commas(set.typeOf(k.schema))), yesNo(k.required), cell(set.defaultOf(k.schema)))
	}
	b.WriteString("\n")
	if inherited.ok() {
		page := strings.TrimSuffix(inherited.file, ".schema.json") + ".md"
		own := map[string]bool{}
		for _, k := range keys {
			own[k.path] = true
		}
		var links []string
		for _, k := range set.walk(inherited) {
			if !own[k.path] && !strings.Contains(k.path, ".") && !strings.Contains(k.path, "[]") {
				links = append(links, fmt.Sprintf("[`%s`](%s#%s)", k.path, page, anchor(k.path)))
			}
		}
		fmt.Fprintf(&b, "It also takes these keys of a [%s](%s), which mean the same here: %s.\n\n",
			strings.ToLower(titleOf(schemaPages, inherited.file)), page, strings.Join(links, ", "))
	}

	seen := map[string]string{}
	for _, k := range keys {
		if other, dup := seen[anchor(k.path)]; dup {
			problems = append(problems, fmt.Sprintf("%s and %s have one anchor", other, k.path))
		}
		seen[anchor(k.path)] = k.path
		fmt.Fprintf(&b, "## `%s`\n\n", k.path)
		desc := set.get(k.schema, "description")
		if !desc.ok() {
			problems = append(problems, fmt.Sprintf("%s has no description", k.path))
		} else {
			fmt.Fprintf(&b, "%s\n\n", prose(desc.n.Value))
		}
		fmt.Fprintf(&b, "- Type: %s\n", commas(set.typeOf(k.schema)))
		if c := set.constraints(k.schema); c != "" {
			fmt.Fprintf(&b, "- Constraints: %s\n", c)
		}
		fmt.Fprintf(&b, "- Required: %s\n", yesNo(k.required))
		if d := set.defaultOf(k.schema); d != "" {
			fmt.Fprintf(&b, "- Default: %s\n", d)
		}
		if v := set.values(k.schema); len(v) > 0 {
			fmt.Fprintf(&b, "- Values: %s\n", strings.Join(v, ", "))
		}
		if k.same != "" {
			fmt.Fprintf(&b, "- Keys: those of [`%s`](#%s)\n", k.same, anchor(k.same))
		}
		b.WriteString("\n")
		ex := set.example(k.schema)
		if ex == nil && k.nested {
			continue // its keys' examples show it
		}
		if ex == nil {
			problems = append(problems, fmt.Sprintf("%s has no example (add \"examples\" to the schema)", k.path))
			continue
		}
		fmt.Fprintf(&b, "```yaml\n%s```\n\n", placed(k.segs, ex))
	}
	return strings.TrimSuffix(b.String(), "\n"), problems
}

// withRequired marks the root's required keys: a root that refers to its
// keys' definitions (the skill's) says which it requires on itself.
func withRequired(set schemaSet, root at, keys []key) []key {
	req := set.strings(root.own("required"))
	for i := range keys {
		if !strings.ContainsAny(keys[i].path, ".[") && slices.Contains(req, keys[i].path) {
			keys[i].required = true
		}
	}
	return keys
}

func titleOf(pages []schemaPage, file string) string {
	for _, p := range pages {
		if p.kind+".schema.json" == file {
			return p.title
		}
	}
	return file
}

// typeOf says what a key's value is, in words.
func (s schemaSet) typeOf(a at) string {
	types := s.strings(s.get(a, "type"))
	if v := s.get(a, "type"); v.ok() && v.n.Kind == yaml.ScalarNode {
		types = []string{v.n.Value}
	}
	if len(types) == 0 {
		if enum := s.get(a, "enum"); enum.ok() {
			seen := map[string]bool{}
			for _, c := range enum.n.Content {
				t := map[string]string{"!!bool": "boolean", "!!int": "integer"}[c.Tag]
				if t == "" {
					t = "string"
				}
				if !seen[t] {
					seen[t] = true
					types = append(types, t)
				}
			}
		}
	}
	var words []string
	for _, t := range types {
		switch t {
		case "array":
			items := s.get(a, "items")
			switch it := s.get(items, "type"); {
			case s.hasKeys(items):
				words = append(words, "list of objects")
			case it.ok() && it.n.Kind == yaml.ScalarNode:
				words = append(words, "list of "+it.n.Value+"s")
			default:
				words = append(words, "list")
			}
		case "object":
			vals := s.get(a, "additionalProperties")
			switch {
			case s.hasKeys(a):
				words = append(words, "object")
			case s.hasKeys(vals):
				words = append(words, "mapping of names to objects")
			case vals.ok() && vals.n.Kind == yaml.MappingNode:
				words = append(words, "mapping of names to "+plural(s.typeOf(vals)))
			default:
				words = append(words, "object")
			}
		default:
			words = append(words, t)
		}
	}
	if len(words) == 0 {
		return "any"
	}
	return strings.Join(words, " or ")
}

// commas turns "a or b or c" into "a, b or c".
func commas(s string) string {
	words := strings.Split(s, " or ")
	if len(words) < 3 {
		return s
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// plural turns "string or list of strings" into "strings or lists of strings".
func plural(typ string) string {
	words := strings.Split(typ, " or ")
	for i, w := range words {
		first, rest, _ := strings.Cut(w, " ")
		words[i] = strings.TrimSpace(first + "s " + rest)
	}
	return strings.Join(words, " or ")
}

func scalarValue(a at) []string {
	if a.ok() && a.n.Kind == yaml.ScalarNode {
		return []string{a.n.Value}
	}
	return nil
}

// constraints says what the schema bounds a value to, beyond its type.
func (s schemaSet) constraints(a at) string {
	var c []string
	minL, maxL := scalarValue(s.get(a, "minLength")), scalarValue(s.get(a, "maxLength"))
	switch {
	case len(minL) > 0 && len(maxL) > 0:
		c = append(c, minL[0]+"–"+maxL[0]+" characters")
	case len(maxL) > 0:
		c = append(c, "at most "+maxL[0]+" characters")
	case len(minL) > 0 && minL[0] == "1":
		c = append(c, "not empty")
	case len(minL) > 0:
		c = append(c, "at least "+minL[0]+" characters")
	}
	if m := scalarValue(s.get(a, "minimum")); len(m) > 0 {
		c = append(c, "at least "+m[0])
	}
	if m := scalarValue(s.get(a, "minItems")); len(m) > 0 {
		c = append(c, "at least "+m[0]+map[bool]string{true: " item", false: " items"}[m[0] == "1"])
	}
	if p := scalarValue(s.get(a, "pattern")); len(p) > 0 {
		c = append(c, "matches `"+p[0]+"`")
	}
	if p := scalarValue(s.get(s.get(a, "items"), "pattern")); len(p) > 0 {
		c = append(c, "each matches `"+p[0]+"`")
	}
	return strings.Join(c, "; ")
}

// defaultOf is the schema's default for a key, as YAML in a code span.
func (s schemaSet) defaultOf(a at) string {
	d := s.get(a, "default")
	if !d.ok() {
		return ""
	}
	return "`" + d.n.Value + "`"
}

// values are the values a key takes: its enum, or the enum of its string
// form when it is a string or an object.
func (s schemaSet) values(a at) []string {
	enum := s.get(a, "enum")
	if !enum.ok() {
		enum = s.get(s.get(a, "then"), "enum")
	}
	var out []string
	if enum.ok() {
		for _, c := range enum.n.Content {
			out = append(out, "`"+c.Value+"`")
		}
	}
	return out
}

// example is a value to show for a key: the schema's first example, else
// its default, else its first value.
func (s schemaSet) example(a at) *yaml.Node {
	if ex := s.get(a, "examples"); ex.ok() && len(ex.n.Content) > 0 {
		return ex.n.Content[0]
	}
	if d := s.get(a, "default"); d.ok() {
		return d.n
	}
	if v := s.get(a, "enum"); v.ok() && len(v.n.Content) > 0 {
		return v.n.Content[0]
	}
	return nil
}

// placed returns value set at its key's place in a manifest, as YAML:
// tools[].run.command is shown inside a tool's run.
func placed(segs []seg, value *yaml.Node) string {
	v := restyle(value)
	for i := len(segs) - 1; i >= 0; i-- {
		sg := segs[i]
		if sg.list && i != len(segs)-1 {
			v = &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{v}}
		}
		name := sg.key
		if sg.placeholder != "" {
			name = sg.placeholder
		}
		v = &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: name}, v}}
	}
	out, err := yaml.Dump(v, yaml.WithIndent(2), yaml.WithLineWidth(-1))
	if err != nil {
		panic(err) // a node built above from parsed nodes always encodes
	}
	return string(out)
}

// restyle copies a node parsed from JSON into YAML as a person writes it:
// plain scalars where they read the same, lists and mappings of scalars
// on one line, anything deeper as blocks.
func restyle(n *yaml.Node) *yaml.Node {
	c := *n
	c.Style = 0
	c.Content = nil
	flat := true
	for _, k := range n.Content {
		r := restyle(k)
		c.Content = append(c.Content, r)
		if k.Kind != yaml.ScalarNode {
			flat = false
		}
	}
	if c.Kind != yaml.ScalarNode && flat && len(n.Content) <= 8 {
		c.Style = yaml.FlowStyle
	}
	return &c
}

// renderIndex renders docs/reference/README.md: the generated pages.
func renderIndex(set schemaSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- Generated by `%s`. -->\n\n", regenerate)
	b.WriteString("# Reference\n\n")
	b.WriteString("Generated from the JSON Schemas in `schemas/` and from the command tree of `fsd`, and checked by `go test`: " +
		"a page that no longer matches its source fails the test, which prints the command that rewrites it. " +
		"The guides say how things fit together: [File formats](../formats.md) and [the CLI](../cli.md).\n\n")
	b.WriteString("| Page | Generated from | What it is |\n|---|---|---|\n")
	for _, p := range schemaPages {
		file := p.kind + ".schema.json"
		desc := set.get(at{file, set[file]}, "description").n.Value
		first, _, _ := strings.Cut(desc, ". ")
		fmt.Fprintf(&b, "| [%s](%s) | [schemas/%s](../../schemas/%s) | %s |\n", p.title, p.file, file, file, cell(strings.TrimSuffix(first, ".")))
	}
	b.WriteString("| [Command line](cli.md) | the commands of `fsd` (`newRootCmd`) | every command, its usage, examples and flags |\n")
	return b.String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// prose escapes the characters markdown would read as markup (emphasis,
// HTML) outside the description's code spans.
func prose(s string) string {
	parts := strings.Split(s, "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = strings.NewReplacer(`\`, `\\`, "*", `\*`, "<", `\<`, ">", `\>`).Replace(parts[i])
	}
	return strings.Join(parts, "`")
}

// cell is prose fit for a table cell.
func cell(s string) string { return strings.ReplaceAll(prose(s), "|", `\|`) }

// TestSkillDirsDescribed: the workflow schema's skills key names the
// folders spec searches when the key is absent (spec.DefaultSkillDirs), a
// default a schema cannot state as a value.
func TestSkillDirsDescribed(t *testing.T) {
	set := loadSchemas(t)
	file := schemas.KindWorkflow + ".schema.json"
	skills := set.get(set.get(at{file, set[file]}, "properties"), "skills")
	desc := set.get(skills, "description")
	if !desc.ok() {
		t.Fatal("the workflow schema's skills has no description")
	}
	for _, dir := range spec.DefaultSkillDirs {
		if !strings.Contains(desc.n.Value, dir) {
			t.Errorf("the workflow schema's skills does not name %s, a folder searched without the key: %q", dir, desc.n.Value)
		}
	}
}
