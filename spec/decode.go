package spec

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/diag"
)

// decoder walks a YAML tree into manifest types. It trusts the schema to
// report wrong types and missing keys, so a value of the wrong type is
// skipped silently here; it reports what the schema cannot say well:
// unknown keys (with a suggestion), duplicate keys, and value rules.
type decoder struct {
	file  string
	diags diag.List
	// unknown is the severity of an unknown key: an error in fsd's own
	// files, a warning in a SKILL.md written for another product.
	unknown diag.Severity
}

func (d *decoder) pos(n *yaml.Node) diag.Pos {
	if n == nil {
		return diag.Pos{File: d.file, Line: 1, Col: 1}
	}
	return diag.Pos{File: d.file, Line: n.Line, Col: n.Column}
}

func (d *decoder) errorf(n *yaml.Node, kind, format string, args ...any) *diag.Diagnostic {
	d.diags = append(d.diags, diag.Errorf(d.pos(n), kind, format, args...))
	return &d.diags[len(d.diags)-1]
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// field is one key of a mapping, in file order.
type field struct {
	key string
	k   *yaml.Node
	v   *yaml.Node
}

// fields returns a mapping's known keys in file order and fills node with
// positions. Unknown and duplicate keys are reported; a non-mapping gives
// nothing (the schema reports it).
func (d *decoder) fields(n *yaml.Node, known []string, node *Node) []field {
	return d.fieldsIn(nil, n, known, node)
}

// fieldsIn is fields appended to buf: a caller that decodes many mappings
// of a few keys (a workflow's tasks) passes one buffer for all of them.
func (d *decoder) fieldsIn(buf []field, n *yaml.Node, known []string, node *Node) []field {
	n = deref(n)
	if n == nil {
		return nil
	}
	node.Pos = d.pos(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	node.Keys = make([]KeyPos, 0, len(n.Content)/2)
	// G2: duplicates are found by a scan of the keys so far, or through a
	// map for a mapping too long to scan (agents, metadata, a schema's
	// properties): no mapping costs a quadratic search.
	var seen map[string]int
	if len(n.Content)/2 > 16 {
		seen = make(map[string]int, len(n.Content)/2)
	}
	out := buf[:0]
	if cap(out) < len(n.Content)/2 {
		out = make([]field, 0, len(n.Content)/2)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			d.errorf(n.Content[i], "syntax", "a mapping key must be a plain string")
			continue
		}
		if prev := firstKey(node.Keys, seen, k.Value); prev >= 0 {
			d.errorf(k, "duplicate", "duplicate key %q (first at line %d)", k.Value, node.Keys[prev].Line)
			continue
		}
		if seen != nil {
			seen[k.Value] = len(node.Keys)
		}
		vp := d.pos(deref(v))
		node.Keys = append(node.Keys, KeyPos{Key: k.Value, Line: int32(vp.Line), Col: int32(vp.Col)})
		if known != nil && !contains(known, k.Value) {
			diagn := diag.Diagnostic{Pos: d.pos(k), Severity: d.unknown, Kind: "unknown-key",
				Message: "unknown key " + strconv.Quote(k.Value), Hint: didYouMean(k.Value, known)}
			d.diags = append(d.diags, diagn)
			continue
		}
		out = append(out, field{key: k.Value, k: k, v: deref(v)})
	}
	return out
}

// firstKey is the index in keys of key, or -1; seen indexes keys when it
// is not nil.
func firstKey(keys []KeyPos, seen map[string]int, key string) int {
	if seen != nil {
		if i, ok := seen[key]; ok {
			return i
		}
		return -1
	}
	for i, k := range keys {
		if k.Key == key {
			return i
		}
	}
	return -1
}

// pairs returns every key of a mapping whose keys are names (agents,
// metadata), reporting duplicates.
func (d *decoder) pairs(n *yaml.Node, node *Node) []field {
	return d.fields(n, nil, node)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// str returns a string scalar's value. YAML's other scalars (numbers,
// booleans) are the schema's to report, not silently stringified.
func str(n *yaml.Node) (string, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return "", false
	}
	return n.Value, true
}

// scalarText returns any scalar's text (for metadata, where Agent Skills
// allows numbers and booleans too).
func scalarText(n *yaml.Node) (string, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return "", false
	}
	return n.Value, true
}

// integer returns an integer scalar's value. It reads what the schema
// check accepts as an integer, so a limit the check let through is never
// dropped as 0 ("no limit"): YAML's int forms
// (0x1F, 0o17, 1_000) and a float with no fractional part (1e3, 10.0), as
// JSON Schema's "integer" allows. A value past int's range is clamped to
// it (a bound that large bounds nothing either way).
func integer(n *yaml.Node) (int, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return 0, false
	}
	switch n.ShortTag() {
	case "!!int":
		v := strings.ReplaceAll(n.Value, "_", "")
		i, err := strconv.ParseInt(strings.Replace(v, "0o", "0", 1), 0, strconv.IntSize)
		if err == nil {
			return int(i), true
		}
		if errors.Is(err, strconv.ErrRange) {
			if strings.HasPrefix(v, "-") {
				return math.MinInt, true
			}
			return math.MaxInt, true
		}
		return 0, false
	case "!!float":
		f, ok := number(n)
		if !ok || math.IsNaN(f) || f != math.Trunc(f) {
			return 0, false
		}
		switch {
		case f >= math.MaxInt:
			return math.MaxInt, true
		case f <= math.MinInt:
			return math.MinInt, true
		}
		return int(f), true
	}
	return 0, false
}

// decodePreview reads a preview length; the schema has checked it is a
// non-negative integer.
func decodePreview(n *yaml.Node) *int {
	v, ok := integer(n)
	if !ok {
		return nil
	}
	return &v
}

// number returns an int or float scalar's value.
func number(n *yaml.Node) (float64, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	return f, err == nil
}

func boolean(n *yaml.Node) (bool, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return false, false
	}
	return strings.EqualFold(n.Value, "true"), true
}

// strList returns the string elements of a sequence and their positions.
func (d *decoder) strList(n *yaml.Node) ([]string, []diag.Pos) {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil, nil
	}
	out := make([]string, 0, len(n.Content))
	pos := make([]diag.Pos, 0, len(n.Content))
	for _, e := range n.Content {
		if s, ok := str(e); ok {
			out = append(out, s)
			pos = append(pos, d.pos(deref(e)))
		}
	}
	return out, pos
}

// duration parses a Go duration. A bad one is reported here, with the
// fix; the schema's pattern error at the same place is then dropped.
func (d *decoder) duration(n *yaml.Node) time.Duration {
	s, ok := str(n)
	if !ok {
		return 0
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.errorf(n, "duration", "invalid duration %q", s).Hint = "use a Go duration such as 30s, 2m or 1h30m"
		return 0
	}
	if v <= 0 {
		d.errorf(n, "duration", "duration %q must be positive", s)
		return 0
	}
	return v
}
