package output

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is a compiled output schema. It is immutable and safe for
// concurrent use.
type Schema struct {
	s   *jsonschema.Schema
	raw json.RawMessage
}

// CompileError is a schema that does not compile. Path is where in the
// schema the problem is (object keys and array indices from its root),
// empty when the problem is about the whole schema.
type CompileError struct {
	Path []string
	Msg  string
}

func (e *CompileError) Error() string {
	if len(e.Path) == 0 {
		return e.Msg
	}
	return "at /" + strings.Join(e.Path, "/") + ": " + e.Msg
}

// noLoader refuses every URL: an output schema is self-contained.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	if _, rel, ok := strings.Cut(u, "mem:///output/"); ok {
		u = rel
	}
	return nil, fmt.Errorf("an output schema cannot refer to %s: put the definition under $defs and use \"$ref\": \"#/$defs/NAME\"", u)
}

// Compile compiles doc, a JSON Schema as decoded from YAML or JSON (maps,
// slices, strings, numbers, booleans). name only labels the schema.
// Draft 2020-12 applies unless the schema's $schema names another draft.
func Compile(name string, doc any) (*Schema, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, &CompileError{Msg: "not a JSON value: " + err.Error()}
	}
	key := name + "\x00" + string(raw)
	compiled.mu.Lock()
	r, ok := compiled.m[key]
	compiled.mu.Unlock()
	if !ok {
		r.s, r.err = compile(name, raw)
		compiled.mu.Lock()
		if len(compiled.m) >= maxCompiled {
			clear(compiled.m)
		}
		compiled.m[key] = r
		compiled.mu.Unlock()
	}
	if r.err != nil {
		return nil, r.err
	}
	return r.s, nil
}

// compiled holds the schemas compiled so far, and their errors, by name
// and JSON: each attempt of a task with a typed answer compiles its
// agent's schema, as does loading the skill, and a compile costs more
// than a short task (the library checks the schema against the 2020-12
// meta-schema), so a run of many tasks of one agent compiles its schema
// once. A Schema is immutable, so one serves every caller; past
// maxCompiled schemas (a server seeing ever new ones) it starts over (Z4).
var compiled = struct {
	mu sync.Mutex
	m  map[string]compileResult
}{m: map[string]compileResult{}}

const maxCompiled = 256

type compileResult struct {
	s   *Schema
	err error
}

func compile(name string, raw []byte) (*Schema, error) {
	// Re-read as JSON so numbers are json.Number, whatever the YAML
	// decoder produced.
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, &CompileError{Msg: err.Error()}
	}
	switch v.(type) {
	case map[string]any, bool:
	default:
		return nil, &CompileError{Msg: "a JSON Schema is an object (or true/false)"}
	}
	loc := "mem:///output/" + url.PathEscape(name) + ".json"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(loc, v); err != nil {
		return nil, &CompileError{Msg: err.Error()}
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, compileError(err, v)
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, raw)
	return &Schema{s: s, raw: compact.Bytes()}, nil
}

// compileError turns the compiler's error into a CompileError with the
// place in the schema doc where it can be found.
func compileError(err error, doc any) *CompileError {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			leaf := firstLeaf(ve)
			return &CompileError{Path: leaf.InstanceLocation, Msg: "not a valid JSON Schema: " + message(leaf)}
		}
	}
	var re *jsonschema.InvalidRegexError
	if errors.As(err, &re) {
		return &CompileError{Path: fragment(re.URL), Msg: fmt.Sprintf("invalid regular expression %q: %v", re.Regex, re.Err)}
	}
	var le *jsonschema.LoadURLError
	if errors.As(err, &le) {
		// The loader was asked for the URL a $ref resolved to: point at
		// that $ref.
		target := strings.TrimPrefix(le.URL, "mem:///output/")
		return &CompileError{Path: refPath(doc, nil, func(ref string) bool {
			r, _, _ := strings.Cut(ref, "#")
			return r != "" && (r == target || strings.HasSuffix(le.URL, "/"+strings.TrimPrefix(r, "./")))
		}), Msg: le.Err.Error()}
	}
	var pe *jsonschema.JSONPointerNotFoundError
	if errors.As(err, &pe) {
		ref := pe.URL
		if i := strings.Index(ref, "#"); i >= 0 {
			ref = ref[i:]
		}
		return &CompileError{Path: refPath(doc, nil, func(r string) bool { return r == ref }),
			Msg: fmt.Sprintf("$ref %q points at nothing in the schema", ref)}
	}
	msg := err.Error()
	// The compiler names the schema by its in-memory URL; the user knows
	// it as the agent's output.
	if i := strings.Index(msg, "mem:///output/"); i >= 0 {
		if j := strings.Index(msg[i:], "#"); j >= 0 {
			msg = msg[:i] + msg[i+j:]
		}
	}
	return &CompileError{Msg: msg}
}

// refPath is the path to the first "$ref" in doc (keys in sorted order)
// whose value match accepts, ending in "$ref" itself; nil when none does.
func refPath(doc any, at []string, match func(string) bool) []string {
	switch v := doc.(type) {
	case map[string]any:
		if r, ok := v["$ref"].(string); ok && match(r) {
			return append(slices.Clip(at), "$ref")
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if p := refPath(v[k], append(slices.Clip(at), k), match); p != nil {
				return p
			}
		}
	case []any:
		for i, e := range v {
			if p := refPath(e, append(slices.Clip(at), strconv.Itoa(i)), match); p != nil {
				return p
			}
		}
	}
	return nil
}

func firstLeaf(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(e.Causes) > 0 {
		e = e.Causes[0]
	}
	return e
}

// fragment reads the JSON pointer in a URL's fragment as a path.
func fragment(u string) []string {
	_, frag, ok := strings.Cut(u, "#")
	if !ok || frag == "" || frag == "/" {
		return nil
	}
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	parts := strings.Split(strings.TrimPrefix(frag, "/"), "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts
}

// JSON is the schema, compact, as providers receive it.
func (s *Schema) JSON() json.RawMessage { return s.raw }

// Check reads a final answer as the schema's JSON value. ok reports
// whether it is one; then value is the value, compact. Otherwise problems
// lists what is wrong, one line each, for the model to repair.
func (s *Schema) Check(answer string) (value json.RawMessage, problems []string) {
	text := Unfence(answer)
	if text == "" {
		return nil, []string{"the answer is empty; it must be a JSON value"}
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, []string{"the answer is not JSON: " + err.Error()}
	}
	if dec.More() || dec.InputOffset() < int64(len(text)) && strings.TrimSpace(text[dec.InputOffset():]) != "" {
		return nil, []string{"the answer has text after its JSON value; answer with the JSON value alone"}
	}
	if err := s.s.Validate(v); err != nil {
		return nil, Violations(err)
	}
	var b bytes.Buffer
	_ = json.Compact(&b, []byte(text))
	return b.Bytes(), nil
}

// Unfence returns the answer trimmed, and the content of a fenced code
// block when the answer is exactly one (```json … ``` or ``` … ```).
func Unfence(answer string) string {
	t := strings.TrimSpace(answer)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return t
	}
	body := t[3 : len(t)-3]
	nl := strings.IndexByte(body, '\n')
	if nl < 0 {
		return t
	}
	if lang := strings.TrimSpace(body[:nl]); lang != "" && !strings.EqualFold(lang, "json") {
		return t
	}
	body = body[nl+1:]
	if strings.Contains(body, "```") {
		return t // more than one block
	}
	return strings.TrimSpace(body)
}

// MaxViolations bounds the lines Violations returns.
const MaxViolations = 20

// Violations lists a validation error's leaves, one a line, each with
// where in the value it is ("/" for the value itself).
func Violations(err error) []string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	var lines []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		lines = append(lines, fmt.Sprintf("at /%s: %s", strings.Join(e.InstanceLocation, "/"), message(e)))
	}
	walk(ve)
	// The validator reports sibling properties in no fixed order: sorted,
	// the same answer gives the same message (and repair turn) each time.
	slices.Sort(lines)
	if len(lines) > MaxViolations {
		lines = append(lines[:MaxViolations], fmt.Sprintf("and %d more", len(lines)-MaxViolations))
	}
	return lines
}

func message(e *jsonschema.ValidationError) string {
	if out := e.BasicOutput(); out.Error != nil {
		return out.Error.String()
	}
	return e.Error()
}
