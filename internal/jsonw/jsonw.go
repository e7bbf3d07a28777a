package jsonw

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// String appends s as a JSON string, escaped as json.Marshal escapes it.
// (The loop is encoding/json's appendString with escapeHTML set, Go 1.26.)
func String(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Strings appends ss as a JSON array of strings.
func Strings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = String(dst, s)
	}
	return append(dst, ']')
}

// OptString appends the field key: s, unless s is empty: a string field
// tagged omitempty.
func OptString(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	return String(Key(dst, key), s)
}

// OptTrue appends the field key: true, unless v is false: a bool field
// tagged omitempty.
func OptTrue(dst []byte, key string, v bool) []byte {
	if !v {
		return dst
	}
	return append(Key(dst, key), "true"...)
}

// Key appends `"name":`, after a comma unless dst ends an object's or an
// array's opening; name needs no escaping (a Go struct tag's key).
func Key(dst []byte, name string) []byte {
	if n := len(dst); n > 0 && dst[n-1] != '{' && dst[n-1] != '[' {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, name...)
	return append(dst, '"', ':')
}

// Int appends n.
func Int(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// Bool appends true or false.
func Bool(dst []byte, v bool) []byte { return strconv.AppendBool(dst, v) }

// Float appends f as json.Marshal writes a float64: the shortest form,
// exponent only below 1e-6 or from 1e21. NaN and infinities, which JSON
// cannot hold, are written as null.
func Float(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as json does.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// FloatOK reports whether json can encode f (not NaN nor an infinity).
func FloatOK(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// TimeOK reports whether json can encode t: RFC 3339 holds a year of
// four digits and a zone offset under 24 hours, and time.Time's
// MarshalJSON refuses the rest. A clock gives no such time, but a record
// line holding one could not be read back: an appender falls back to
// json.Marshal, and fails as it does, instead of writing it.
func TimeOK(t time.Time) bool {
	// The year is the one of the time in its zone: from its Unix seconds
	// shifted by the offset, which costs less than t.Year().
	_, off := t.Zone()
	s := t.Unix() + int64(off)
	return off > -24*3600 && off < 24*3600 && s >= year0 && s < year10000
}

// year0 and year10000 are the Unix seconds of 0000-01-01 and
// 10000-01-01, UTC.
const (
	year0     = -62167219200
	year10000 = 253402300800
)

// Time appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds, quoted).
func Time(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}

// Value appends v through json.Marshal: for the rare fields an appender
// leaves to it (raw JSON, which json compacts and escapes). A value json
// cannot encode is written as null.
func Value(dst []byte, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return append(dst, "null"...)
	}
	return append(dst, b...)
}

// Matches reports whether appendFn writes what json.Marshal writes for a
// value of T once Fill has set every field of it, and for its zero value.
//
// F1: an appender that no longer matches its type is not used.
func Matches[T any](appendFn func([]byte, *T) []byte) bool {
	var zero T
	if !same(&zero, appendFn) {
		return false
	}
	var full T
	Fill(&full)
	return same(&full, appendFn)
}

// MatchesOnce is Matches computed at its first call instead of at program
// start: the check marshals filled values through reflection, which every
// fsd command would otherwise pay for in its package initialisation,
// whether it writes a record or not (Z2).
func MatchesOnce[T any](appendFn func([]byte, *T) []byte) func() bool {
	return sync.OnceValue(func() bool { return Matches(appendFn) })
}

func same[T any](v *T, appendFn func([]byte, *T) []byte) bool {
	want, err := json.Marshal(v)
	if err != nil {
		return false
	}
	return bytes.Equal(appendFn(nil, v), want)
}

// Fill sets every exported field of the struct ptr points to, nested
// structs, pointers and slices included, to a non-zero value that needs
// escaping where it is text: what Matches compares with.
func Fill(ptr any) { fill(reflect.ValueOf(ptr).Elem(), 0) }

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

func fill(v reflect.Value, depth int) {
	if depth > 8 {
		return
	}
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(time.Date(2026, 12, 2, 3, 4, 5, 60700, time.UTC)))
		return
	case v.Type() == rawType:
		v.SetBytes([]byte(`{ "a&b": [1, "<x>"] }`))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("a \"q\" <b>&\\\n\t\x01 é\u2028\xff")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(7 + depth))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(9 + depth))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.1 + float64(depth))
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fill(s.Index(0), depth+1)
		fill(s.Index(1), depth+1)
		v.Set(s)
	case reflect.Map:
		var key reflect.Value
		switch v.Type().Key().Kind() {
		case reflect.String:
			key = reflect.ValueOf("k")
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			key = reflect.ValueOf(3)
		default:
			return
		}
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, depth+1)
		m.SetMapIndex(key.Convert(v.Type().Key()), e)
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	}
}
