package schemas

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"go.yaml.in/yaml/v4"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/fsdrun/fsd/diag"
)

// printer renders error kinds this package has no message of its own for.
// A message.Printer is safe for concurrent use once built.
var printer = message.NewPrinter(language.English)

// collect appends the leaf errors of e. A oneOf failure is reported as
// itself: its causes are every alternative's complaints, which read as
// noise ("missing property command", "missing property reply", …).
//
// parent is the enclosing error's instance location: a propertyNames
// error's own location is not reliable in jsonschema v6.0.3, but it is
// always about a key of the parent's object.
//
// ix indexes the keys of long mappings, shared by all of e's errors.
func collect(e *jsonschema.ValidationError, parent []string, root *yaml.Node, file string, ix *keyIndex, out *diag.List) {
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		return // spec reports unknown keys, with a suggestion
	case *kind.OneOf, *kind.AnyOf:
		n, key := ix.locate(root, e.InstanceLocation)
		*out = append(*out, diag.Errorf(pos(n, file), "schema", "%s%s", prefix(key), message1(k)))
		return
	case *kind.PropertyNames:
		// The only constrained names are ids, and spec reports an invalid
		// id at the same place with the rule in words (spec.IDRule):
		// this message must not state a rule of its own.
		obj, _ := ix.locate(root, parent)
		kn, where := ix.keyNode(obj, k.Property), ""
		if kn == deref(obj) {
			// The parent is not always the key's mapping when the
			// document has other errors: find the key where it is.
			if kn, where = ix.findKey(root, k.Property); kn == nil {
				kn = root
			}
		} else {
			_, where = ix.locate(root, parent)
		}
		*out = append(*out, diag.Errorf(pos(kn, file), "schema", "%sinvalid name %q", prefix(where), k.Property))
		return
	}
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			collect(c, e.InstanceLocation, root, file, ix, out)
		}
		return
	}
	n, key := ix.locate(root, e.InstanceLocation)
	*out = append(*out, diag.Errorf(pos(n, file), "schema", "%s%s", prefix(key), message1(e.ErrorKind)))
}

func prefix(key string) string {
	if key == "" {
		return ""
	}
	return key + ": "
}

// message1 words the common error kinds for a YAML author.
func message1(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = yamlType(w)
		}
		return fmt.Sprintf("expected %s, got %s", strings.Join(want, " or "), yamlType(k.Got))
	case *kind.Required:
		if len(k.Missing) == 1 {
			return fmt.Sprintf("missing required key %q", k.Missing[0])
		}
		return fmt.Sprintf("missing required keys %s", quoteAll(k.Missing))
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = fmt.Sprint(w)
		}
		return fmt.Sprintf("%s is not one of %s", show(k.Got), strings.Join(want, ", "))
	case *kind.MaxLength:
		return fmt.Sprintf("too long: %d characters, at most %d", k.Got, k.Want)
	case *kind.MinLength:
		if k.Want == 1 {
			return "must not be empty"
		}
		return fmt.Sprintf("too short: %d characters, at least %d", k.Got, k.Want)
	case *kind.MinItems:
		if k.Want == 1 {
			return "must not be empty"
		}
		return fmt.Sprintf("needs at least %d items, got %d", k.Want, k.Got)
	case *kind.Minimum:
		return fmt.Sprintf("must be at least %s, got %s", k.Want.RatString(), k.Got.RatString())
	case *kind.Pattern:
		return fmt.Sprintf("%q does not match %s", k.Got, k.Want)
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			return "matches none of the allowed forms"
		}
		return "matches more than one of the allowed forms"
	case *kind.AnyOf:
		return "matches none of the allowed forms"
	}
	return k.LocalizedString(printer)
}

// yamlType names a JSON type as YAML authors know it.
func yamlType(t string) string {
	switch t {
	case "object":
		return "mapping"
	case "array":
		return "list"
	}
	return t
}

func show(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, ", ")
}

// locate follows a JSON instance location through the YAML tree and
// returns the node there and the path as a YAML author reads it
// (tools[0].run.timeout). Aliases are followed.
func (ix *keyIndex) locate(n *yaml.Node, loc []string) (*yaml.Node, string) {
	var path strings.Builder
	for _, tok := range loc {
		n = deref(n)
		if n == nil {
			break
		}
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			if i := ix.of(n).last(n, tok); i >= 0 {
				next = n.Content[i+1]
			}
			if path.Len() > 0 {
				path.WriteByte('.')
			}
			path.WriteString(tok)
			if next == nil {
				return n, path.String()
			}
			n = next
		case yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n.Content) {
				return n, path.String()
			}
			fmt.Fprintf(&path, "[%d]", i)
			n = n.Content[i]
		default:
			return n, path.String()
		}
	}
	return n, path.String()
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// keyNode returns the key node named key in mapping m, or m.
func (ix *keyIndex) keyNode(m *yaml.Node, key string) *yaml.Node {
	m = deref(m)
	if m != nil && m.Kind == yaml.MappingNode {
		if i := ix.of(m).first(m, key); i >= 0 {
			return m.Content[i]
		}
	}
	return m
}

// keyIndex maps a long mapping to the positions of its keys, built the
// first time an error is placed in it, and every key name to where
// findKey finds it first, built the first time findKey is called. Without
// them each error scanned its mapping (or the tree), so a file with an
// error in each of 100,000 keys (a hostile metadata, unknown keys, bad
// agent names) took minutes: quadratic, where the decoder is linear (G2
// in spec/decode.go). A short mapping is scanned as before.
type keyIndex struct {
	maps map[*yaml.Node]*mappingKeys
	tree map[string]foundKey // nil until findKey's first call
}

type foundKey struct {
	node *yaml.Node
	path string
}

// mappingKeys is one mapping's keys: the first index of each key node's
// Value (keyNode) and the last of each dereferenced key's (locate, where
// the last of duplicated keys wins, as in the decoded value). nil for a
// mapping short enough to scan.
type mappingKeys struct {
	firstOf, lastOf map[string]int
}

// of returns m's index, building it for a long mapping.
func (ix *keyIndex) of(m *yaml.Node) *mappingKeys {
	if len(m.Content)/2 <= 16 {
		return nil
	}
	if k, ok := ix.maps[m]; ok {
		return k
	}
	if ix.maps == nil {
		ix.maps = map[*yaml.Node]*mappingKeys{}
	}
	k := &mappingKeys{firstOf: make(map[string]int, len(m.Content)/2), lastOf: make(map[string]int, len(m.Content)/2)}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if _, ok := k.firstOf[m.Content[i].Value]; !ok {
			k.firstOf[m.Content[i].Value] = i
		}
		if kn := deref(m.Content[i]); kn != nil {
			k.lastOf[kn.Value] = i
		}
	}
	ix.maps[m] = k
	return k
}

// first is the index in m.Content of the first key node whose Value is
// key, or -1.
func (k *mappingKeys) first(m *yaml.Node, key string) int {
	if k != nil {
		if i, ok := k.firstOf[key]; ok {
			return i
		}
		return -1
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// last is the index in m.Content of the last key that dereferences to
// key, or -1.
func (k *mappingKeys) last(m *yaml.Node, key string) int {
	if k != nil {
		if i, ok := k.lastOf[key]; ok {
			return i
		}
		return -1
	}
	at := -1
	for i := 0; i+1 < len(m.Content); i += 2 {
		if deref(m.Content[i]).Value == key {
			at = i
		}
	}
	return at
}

// findKey returns the first mapping key named key in n's tree (aliases
// are not followed: the tree's own keys are where an author looks) and
// the path to its mapping as locate words it.
//
// The first call indexes every key name of n's tree in the order a search
// would meet it (a mapping's own keys, then each value's tree in turn), so
// each later call is a lookup: n must be the same tree on every call.
func (ix *keyIndex) findKey(n *yaml.Node, key string) (*yaml.Node, string) {
	if ix.tree == nil {
		ix.tree = map[string]foundKey{}
		indexKeys(ix.tree, n, "")
	}
	f := ix.tree[key]
	return f.node, f.path
}

// indexKeys records in tree each key name of n's tree not yet there, in
// findKey's order.
func indexKeys(tree map[string]foundKey, n *yaml.Node, path string) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			indexKeys(tree, c, path)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if _, ok := tree[n.Content[i].Value]; !ok {
				tree[n.Content[i].Value] = foundKey{n.Content[i], path}
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			sub := n.Content[i].Value
			if path != "" {
				sub = path + "." + sub
			}
			indexKeys(tree, n.Content[i+1], sub)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			indexKeys(tree, c, fmt.Sprintf("%s[%d]", path, i))
		}
	}
}
