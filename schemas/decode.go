package schemas

import (
	"encoding/json"
	"fmt"
	"strings"
)

// decodeSchema decodes a schema file as encoding/json does with
// UseNumber (numbers as json.Number, so bounds and enums keep their exact
// value), leaving out what the walk never reads: the annotations of each
// schema in it (ignored: descriptions, titles, examples, defaults), which
// are most of its text and allocations. Only where a schema sits — the
// root, and under the keywords in schemaKeys — are annotations left out,
// so a property named "description" or an enum value stays. The
// validator reads the file itself, whole.
func decodeSchema(data string) (any, error) {
	d := decoder{b: data}
	v, err := d.value(inSchema)
	if err == nil {
		if d.space(); d.i < len(d.b) {
			err = d.errorf("text after the schema")
		}
	}
	return v, err
}

// What a value is, for decodeSchema.
const (
	inData       = iota // any JSON value
	inSchema            // a schema
	inSchemaMap         // an object of schemas (properties, $defs)
	inSchemaList        // an array of schemas (allOf, anyOf, oneOf)
)

// schemaKeys are the keywords of a schema whose value holds schemas.
var schemaKeys = map[string]int{
	"properties": inSchemaMap, "$defs": inSchemaMap,
	"allOf": inSchemaList, "anyOf": inSchemaList, "oneOf": inSchemaList,
	"additionalProperties": inSchema, "propertyNames": inSchema, "items": inSchema,
	"if": inSchema, "then": inSchema, "else": inSchema, "not": inSchema,
}

type decoder struct {
	b string
	i int
}

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", d.i, fmt.Sprintf(format, args...))
}

func (d *decoder) space() {
	for d.i < len(d.b) && strings.IndexByte(" \n\t\r", d.b[d.i]) >= 0 {
		d.i++
	}
}

// value decodes the value at d.i, which is what in says.
func (d *decoder) value(in int) (any, error) {
	d.space()
	if d.i >= len(d.b) {
		return nil, d.errorf("unexpected end")
	}
	switch c := d.b[d.i]; {
	case c == '{':
		return d.object(in)
	case c == '[':
		elem := inData
		if in == inSchemaList {
			elem = inSchema
		}
		out := []any{}
		err := d.each('[', ']', func() error {
			v, err := d.value(elem)
			out = append(out, v)
			return err
		})
		return out, err
	case c == '"':
		return d.str()
	case c == '-' || c >= '0' && c <= '9':
		start := d.i
		for d.i < len(d.b) && strings.IndexByte("+-0123456789.eE", d.b[d.i]) >= 0 {
			d.i++
		}
		n := json.Number(d.b[start:d.i])
		if _, err := n.Float64(); err != nil {
			return nil, d.errorf("bad number %q", n)
		}
		return n, nil
	}
	for _, lit := range []struct {
		text string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if strings.HasPrefix(d.b[d.i:], lit.text) {
			d.i += len(lit.text)
			return lit.v, nil
		}
	}
	return nil, d.errorf("unexpected %q", d.b[d.i])
}

func (d *decoder) object(in int) (map[string]any, error) {
	out := map[string]any{}
	err := d.each('{', '}', func() error {
		d.space()
		k, err := d.str()
		if err != nil {
			return err
		}
		if d.space(); d.i >= len(d.b) || d.b[d.i] != ':' {
			return d.errorf("want ':'")
		}
		d.i++
		member := inData
		switch in {
		case inSchemaMap:
			member = inSchema
		case inSchema:
			if m, ok := schemaKeys[k]; ok {
				member = m
			} else if ignored[k] {
				return d.skip()
			}
		}
		v, err := d.value(member)
		out[k] = v
		return err
	})
	return out, err
}

// each calls one for each member of the object or array opened at d.i.
func (d *decoder) each(open, close byte, one func() error) error {
	d.i++ // open
	if d.space(); d.i < len(d.b) && d.b[d.i] == close {
		d.i++
		return nil
	}
	for {
		if err := one(); err != nil {
			return err
		}
		d.space()
		if d.i >= len(d.b) {
			return d.errorf("unexpected end")
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case close:
			d.i++
			return nil
		default:
			return d.errorf("unexpected %q", d.b[d.i])
		}
	}
}

// str decodes the string at d.i.
func (d *decoder) str() (string, error) {
	start := d.i
	escaped, err := d.pass()
	if err != nil {
		return "", err
	}
	if !escaped {
		return d.b[start+1 : d.i-1], nil
	}
	var s string
	err = json.Unmarshal([]byte(d.b[start:d.i]), &s)
	return s, err
}

// pass moves past the string at d.i; escaped says it holds an escape.
func (d *decoder) pass() (escaped bool, err error) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return false, d.errorf("want a string")
	}
	for d.i++; d.i < len(d.b); d.i++ {
		switch d.b[d.i] {
		case '\\':
			escaped = true
			d.i++
		case '"':
			d.i++
			return escaped, nil
		}
	}
	return false, d.errorf("unterminated string")
}

// skip passes over the value at d.i without keeping it.
func (d *decoder) skip() error {
	d.space()
	if d.i >= len(d.b) {
		return d.errorf("unexpected end")
	}
	switch d.b[d.i] {
	case '{':
		return d.each('{', '}', func() error {
			d.space()
			if _, err := d.pass(); err != nil {
				return err
			}
			if d.space(); d.i >= len(d.b) || d.b[d.i] != ':' {
				return d.errorf("want ':'")
			}
			d.i++
			return d.skip()
		})
	case '[':
		return d.each('[', ']', d.skip)
	case '"':
		_, err := d.pass()
		return err
	}
	_, err := d.value(inData)
	return err
}
