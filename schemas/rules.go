package schemas

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// rule is one schema (an object or true/false) as the walk reads it,
// decoded from the schema's JSON without the validator. A schema that
// uses a keyword the walk does not check is marked delegate: the walk
// hands it, and the value under it, to the validator, compiling it then.
// So a document whose schemas the walk fully knows is judged without
// compiling anything, and compiling — most of what the library costs,
// because it checks each schema against the 2020-12 meta-schema — is paid
// only for a schema the walk cannot judge or a document it does not
// accept.
type rule struct {
	loc       string // file#pointer, where the validator finds it
	f         *forest
	file      string
	ptr       string
	raw       any // the schema's JSON until its keywords are built
	buildOnce sync.Once
	boolean   *bool // a true or false schema
	delegate  bool  // has a keyword the walk does not check

	types              jsonType // 0: any
	enum               []any    // nil: no enum; numbers are json.Number
	ref                *rule
	allOf, anyOf       []*rule
	oneOf              []*rule
	ifR, thenR, elseR  *rule
	not                *rule
	props              map[string]*rule
	addl               *rule // nil: any value
	required           []string
	propNames          *rule
	items              *rule // nil: any item
	minItems, maxItems int   // -1: none
	unique             bool
	minLen, maxLen     int // -1: none
	pattern            string
	min, max           *big.Rat
	exMin, exMax       *big.Rat

	reOnce    sync.Once
	re        *regexp.Regexp
	asciiOnce sync.Once
	asciiRe   *regexp.Regexp // pattern for an ASCII string, or nil

	compileOnce sync.Once
	compiled    *jsonschema.Schema
}

// jsonType is a set of JSON types, as the keyword type names them.
type jsonType uint8

const (
	tNull jsonType = 1 << iota
	tBool
	tNumber
	tInteger
	tString
	tArray
	tObject
)

var typeNames = map[string]jsonType{"null": tNull, "boolean": tBool, "number": tNumber, "integer": tInteger, "string": tString, "array": tArray, "object": tObject}

// walked are the keywords the walk checks. Any keyword not here and not
// in ignored delegates its schema (TestRulesDelegateOtherKeywords), as
// does one whose value is not what the walk expects.
var walked = []string{
	"type", "enum", "$ref", "allOf", "anyOf", "oneOf", "if", "then", "else", "not",
	"properties", "additionalProperties", "required", "propertyNames",
	"items", "minItems", "maxItems", "uniqueItems", "minLength", "maxLength", "pattern",
	"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
}

// keyword builds keyword k of the schema at file#ptr into r; known is
// false for a keyword not in walked, ok false for a value the walk does
// not expect.
func (f *forest) keyword(r *rule, file, ptr, k string, v any) (known, ok bool) {
	sub := func(dst **rule) bool { *dst = f.sub(file, ptr+"/"+k, v); return true }
	switch k {
	case "type":
		return true, r.buildType(v)
	case "enum":
		r.enum, ok = v.([]any)
		return true, ok && r.enum != nil
	case "$ref":
		return true, f.buildRef(r, file, v)
	case "allOf":
		return true, f.list(&r.allOf, file, ptr+"/allOf", v)
	case "anyOf":
		return true, f.list(&r.anyOf, file, ptr+"/anyOf", v)
	case "oneOf":
		return true, f.list(&r.oneOf, file, ptr+"/oneOf", v)
	case "if":
		return true, sub(&r.ifR)
	case "then":
		return true, sub(&r.thenR)
	case "else":
		return true, sub(&r.elseR)
	case "not":
		return true, sub(&r.not)
	case "properties":
		return true, f.buildProperties(r, file, ptr, v)
	case "additionalProperties":
		return true, sub(&r.addl)
	case "required":
		return true, r.buildRequired(v)
	case "propertyNames":
		return true, sub(&r.propNames)
	case "items":
		return true, sub(&r.items)
	case "minItems":
		return true, count(v, &r.minItems)
	case "maxItems":
		return true, count(v, &r.maxItems)
	case "uniqueItems":
		r.unique, ok = v.(bool)
		return true, ok
	case "minLength":
		return true, count(v, &r.minLen)
	case "maxLength":
		return true, count(v, &r.maxLen)
	case "pattern":
		r.pattern, ok = v.(string)
		return true, ok
	case "minimum":
		return true, number(v, &r.min)
	case "maximum":
		return true, number(v, &r.max)
	case "exclusiveMinimum":
		return true, number(v, &r.exMin)
	case "exclusiveMaximum":
		return true, number(v, &r.exMax)
	}
	return false, false
}

// ignored are keywords that assert nothing: annotations, and $defs,
// whose schemas the walk reaches through $ref. $schema and $id count only
// at a file's root, where they name the draft and the base $ref resolves
// against; anywhere else they are delegated.
var ignored = map[string]bool{
	"title": true, "description": true, "examples": true, "default": true, "$comment": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "$defs": true,
}

// forest holds the rules of a set of schema files, built from their JSON
// when first reached; a $ref to another file builds that file's rules.
// mu guards building; a built rule is read only and safe for concurrent
// use.
type forest struct {
	mu      sync.Mutex
	load    func(file string) (string, bool)
	compile func(url string) (*jsonschema.Schema, error)
	base    string
	docs    map[string]any
	rules   map[string]*rule // by file#pointer
}

func newForest(base string, load func(string) (string, bool), compile func(string) (*jsonschema.Schema, error)) *forest {
	return &forest{base: base, load: load, compile: compile, docs: map[string]any{}, rules: map[string]*rule{}}
}

// embeddedRules are the rules of fsd's own schemas.
var embeddedRules = newForest(Base, embedded, compileURL)

// root returns the rules of file's schema.
func (f *forest) root(file string) (*rule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	doc, err := f.doc(file)
	if err != nil {
		return nil, err
	}
	return f.sub(file, "", doc), nil
}

// doc returns file's schema decoded without its annotations.
func (f *forest) doc(file string) (any, error) {
	if d, ok := f.docs[file]; ok {
		return d, nil
	}
	data, ok := f.load(file)
	if !ok {
		return nil, fmt.Errorf("%s is not one of the schemas", file)
	}
	d, err := decodeSchema(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	f.docs[file] = d
	return d, nil
}

// sub returns the rule of the schema v at file#ptr, building it once.
func (f *forest) sub(file, ptr string, v any) *rule {
	loc := file + "#" + ptr
	if r, ok := f.rules[loc]; ok {
		return r
	}
	r := &rule{loc: loc, f: f, minItems: -1, maxItems: -1, minLen: -1, maxLen: -1, file: file, ptr: ptr, raw: v}
	f.rules[loc] = r // before its keywords: a $ref may lead back here
	return r
}

// built returns r with its keywords built, building them on first use: a
// run's manifests reach a part of the schemas (a workflow with no
// sandbox never needs the sandbox's rules).
func (r *rule) built() *rule {
	r.buildOnce.Do(r.build)
	return r
}

func (r *rule) build() {
	f := r.f
	f.mu.Lock()
	defer f.mu.Unlock()
	switch s := r.raw.(type) {
	case bool:
		r.boolean = &s
	case map[string]any:
		for k, x := range s {
			if known, ok := f.keyword(r, r.file, r.ptr, k, x); known {
				if !ok {
					r.delegate = true
				}
				continue
			}
			if !ignored[k] && !(r.ptr == "" && (k == "$schema" || k == "$id")) {
				r.delegate = true
			}
		}
	default:
		r.delegate = true
	}
	r.raw = nil
}

func (r *rule) buildType(v any) bool {
	add := func(x any) bool {
		s, _ := x.(string)
		t, ok := typeNames[s]
		r.types |= t
		return ok
	}
	if l, ok := v.([]any); ok {
		for _, x := range l {
			if !add(x) {
				return false
			}
		}
		return len(l) > 0
	}
	return add(v)
}

// buildRef resolves a $ref to a JSON pointer in this file or in another
// of the forest's files; any other reference (an anchor, a URL outside
// the set) is left to the validator.
func (f *forest) buildRef(r *rule, file string, v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	target, ptr, _ := strings.Cut(s, "#")
	if strings.ContainsAny(ptr, "%") || ptr != "" && ptr[0] != '/' {
		return false
	}
	if target == "" {
		target = file
	} else if strings.ContainsAny(target, "/:") {
		return false
	}
	doc, err := f.doc(target)
	if err != nil {
		return false
	}
	x, ok := lookup(doc, ptr)
	if !ok {
		return false
	}
	r.ref = f.sub(target, ptr, x)
	return true
}

func (f *forest) list(dst *[]*rule, file, ptr string, v any) bool {
	l, ok := v.([]any)
	if !ok || len(l) == 0 {
		return false
	}
	for i, x := range l {
		*dst = append(*dst, f.sub(file, fmt.Sprintf("%s/%d", ptr, i), x))
	}
	return true
}

func (f *forest) buildProperties(r *rule, file, ptr string, v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	r.props = make(map[string]*rule, len(m))
	for k, x := range m {
		r.props[k] = f.sub(file, ptr+"/properties/"+escape(k), x)
	}
	return true
}

func (r *rule) buildRequired(v any) bool {
	l, ok := v.([]any)
	if !ok {
		return false
	}
	for _, x := range l {
		s, ok := x.(string)
		if !ok {
			return false
		}
		r.required = append(r.required, s)
	}
	return true
}

// count reads a non-negative integer keyword such as minLength.
func count(v any, dst *int) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	i, err := n.Int64()
	if err != nil || i < 0 || i > 1<<31 {
		return false
	}
	*dst = int(i)
	return true
}

// number reads a bound such as minimum exactly, as the validator does.
func number(v any, dst **big.Rat) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	*dst, ok = new(big.Rat).SetString(n.String())
	return ok
}

// lookup follows a JSON pointer (RFC 6901) in doc.
func lookup(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		if strings.Contains(tok, "~") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		}
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, false // no pointer into an array: the schemas need none
		}
		if doc, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return doc, true
}

// escape makes a key one token of a JSON pointer in a URL fragment.
func escape(k string) string {
	if !strings.ContainsAny(k, "~/%# ") {
		return k
	}
	return pointerEscaper.Replace(k)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1", "%", "%25", "#", "%23", " ", "%20")

// validator returns r's schema compiled, compiling it on first use; nil
// if it does not compile (Validate's own compile then reports why).
func (r *rule) validator() *jsonschema.Schema {
	r.compileOnce.Do(func() {
		r.compiled, _ = r.f.compile(r.f.base + r.loc)
	})
	return r.compiled
}

// regexp returns r's pattern compiled on first use, as the validator
// compiles it (memoRegexp), or for an ASCII s its ASCII form
// (asciiPattern) when it has one; nil if it does not compile.
func (r *rule) regexp(s string) *regexp.Regexp {
	if !strings.ContainsFunc(s, nonASCII) {
		r.asciiOnce.Do(func() {
			if p, ok := asciiPattern(r.pattern); ok {
				r.asciiRe, _ = regexp.Compile(p)
			}
		})
		if r.asciiRe != nil {
			return r.asciiRe
		}
	}
	r.reOnce.Do(func() { r.re, _ = regexp.Compile(r.pattern) })
	return r.re
}

func nonASCII(r rune) bool { return r >= utf8.RuneSelf }
