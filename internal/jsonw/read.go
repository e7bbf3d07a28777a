package jsonw

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// The readers below take JSON in the form the appenders write it, at
// data[i], and return where it ends and whether it was in that form. A
// decoder built from them reads its type's own encoding without
// reflection and leaves any other input (spaces, keys spelled or ordered
// otherwise, nulls) to json.Unmarshal: a false is never wrong, only
// slower.

// Compact reports whether raw is one JSON value written as
// json.Marshal writes raw JSON: no space outside strings, and <, >, &,
// U+2028 and U+2029 escaped. Such a value json.Marshal copies as it is.
// Invalid UTF-8 and nesting deeper than maxRawDepth report false too (the
// caller leaves those to json.Marshal): a false is never wrong, only
// slower.
func Compact(raw []byte) bool {
	end, ok := scanValue(raw, 0, 0)
	return ok && end == len(raw)
}

// ScanValue checks the value starting at raw[i] as Compact does and
// returns where it ends.
func ScanValue(raw []byte, i int) (int, bool) { return scanValue(raw, i, 0) }

const maxRawDepth = 256

// scanValue checks the value starting at raw[i] and returns where it ends.
func scanValue(raw []byte, i, depth int) (int, bool) {
	if i >= len(raw) || depth > maxRawDepth {
		return i, false
	}
	switch c := raw[i]; {
	case c == '{':
		return scanItems(raw, i+1, depth, '}')
	case c == '[':
		return scanItems(raw, i+1, depth, ']')
	case c == '"':
		return ScanString(raw, i)
	case c == 't':
		return scanWord(raw, i, "true")
	case c == 'f':
		return scanWord(raw, i, "false")
	case c == 'n':
		return scanWord(raw, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return scanNumber(raw, i)
	}
	return i, false
}

// scanItems checks an object's members (end '}') or an array's elements
// (end ']') from raw[i], after the opening, to the end.
func scanItems(raw []byte, i, depth int, end byte) (int, bool) {
	if i < len(raw) && raw[i] == end {
		return i + 1, true
	}
	for {
		var ok bool
		if end == '}' {
			if i >= len(raw) || raw[i] != '"' {
				return i, false
			}
			if i, ok = ScanString(raw, i); !ok || i >= len(raw) || raw[i] != ':' {
				return i, false
			}
			i++
		}
		if i, ok = scanValue(raw, i, depth+1); !ok || i >= len(raw) {
			return i, false
		}
		switch raw[i] {
		case ',':
			i++
		case end:
			return i + 1, true
		default:
			return i, false
		}
	}
}

func scanWord(raw []byte, i int, w string) (int, bool) {
	if len(raw)-i < len(w) || string(raw[i:i+len(w)]) != w {
		return i, false
	}
	return i + len(w), true
}

// scanNumber checks JSON's number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(raw []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		j := i
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
			j++
		}
		return j, j > i
	}
	if raw[i] == '-' {
		i++
	}
	if i < len(raw) && raw[i] == '0' {
		i++
	} else {
		var ok bool
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	if i < len(raw) && raw[i] == '.' {
		var ok bool
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		i++
		if i < len(raw) && (raw[i] == '+' || raw[i] == '-') {
			i++
		}
		var ok bool
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}

// ScanString checks the string starting at raw[i] (its quote) and returns
// where it ends: valid escapes, no control character, and nothing
// json.Marshal would escape (<, >, &, U+2028, U+2029) nor invalid UTF-8.
func ScanString(raw []byte, i int) (int, bool) {
	for i++; i < len(raw); {
		c := raw[i]
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			return i, false
		case c == '\\':
			if i+1 >= len(raw) {
				return i, false
			}
			switch raw[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(raw) {
					return i, false
				}
				for _, h := range raw[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return i, false
					}
				}
				i += 6
			default:
				return i, false
			}
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return i, false
			}
			i += size
		}
	}
	return i, false
}

// ReadInt decodes an integer that fits an int, nothing else.
func ReadInt(data []byte, i int, n *int) (int, bool) {
	j := i
	if j < len(data) && data[j] == '-' {
		j++
	}
	start := j
	for j < len(data) && data[j] >= '0' && data[j] <= '9' {
		j++
	}
	if j == start || j-start > 18 || data[start] == '0' && j-start > 1 {
		return i, false
	}
	v := 0
	for _, c := range data[start:j] {
		v = v*10 + int(c-'0')
	}
	if data[i] == '-' {
		v = -v
	}
	*n = v
	return j, true
}

// ReadString decodes a string as json.Unmarshal does: escapes replaced,
// invalid UTF-8 and lone surrogates by U+FFFD.
func ReadString(data []byte, i int, s *string) (int, bool) {
	return ReadStringOf(data, "", i, s)
}

// ReadStringOf is ReadString for data whose text is also src
// (string(data), or "" when there is none): a string with nothing to
// replace is then a piece of src rather than a copy of its own, so the
// strings of a document decoded at once cost one allocation together.
// They keep src alive as long as any of them lives.
func ReadStringOf(data []byte, src string, i int, s *string) (int, bool) {
	t, end, ok := unquote(data, src, i)
	if !ok {
		return i, false
	}
	*s = t
	return end, true
}

// unquote reads the JSON string at data[i]: its text, where it ends, and
// whether it is a string JSON accepts. The rules are encoding/json's
// (unquoteBytes, Go 1.26), with its scanner's refusal of \' and of
// control characters. A string that needs no change is one copy of its
// bytes (a piece of src when src is data's text), and one that does is
// built in place, also one allocation.
func unquote(data []byte, src string, i int) (string, int, bool) {
	if i >= len(data) || data[i] != '"' {
		return "", i, false
	}
	start := i + 1
	r := start
	for r < len(data) {
		c := data[r]
		if c == '"' {
			if len(src) == len(data) {
				return src[start:r], r + 1, true
			}
			return string(data[start:r]), r + 1, true
		}
		if c == '\\' || c < ' ' {
			break
		}
		if c < utf8.RuneSelf {
			r++
			continue
		}
		rr, size := utf8.DecodeRune(data[r:])
		if rr == utf8.RuneError && size == 1 {
			break
		}
		r += size
	}
	var b strings.Builder
	b.Grow(r - start + 64)
	b.Write(data[start:r])
	for r < len(data) {
		switch c := data[r]; {
		case c == '"':
			return b.String(), r + 1, true
		case c < ' ':
			return "", r, false
		case c == '\\':
			if r+1 >= len(data) {
				return "", r, false
			}
			switch e := data[r+1]; e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				rr := getu4(data[r:])
				if rr < 0 {
					return "", r, false
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getu4(data[r:])); dec != utf8.RuneError {
						b.WriteRune(dec)
						r += 6
						continue
					}
					rr = utf8.RuneError
				}
				b.WriteRune(rr)
				continue
			default:
				return "", r, false
			}
			r += 2
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			r++
		default:
			rr, size := utf8.DecodeRune(data[r:])
			b.WriteRune(rr)
			r += size
		}
	}
	return "", r, false
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// ReadFloat decodes a number as json.Unmarshal decodes it into a float64;
// false for one out of a float64's range, which json refuses too.
func ReadFloat(data []byte, i int, f *float64) (int, bool) {
	if i >= len(data) || data[i] != '-' && (data[i] < '0' || data[i] > '9') {
		return i, false
	}
	end, ok := scanNumber(data, i)
	if !ok {
		return i, false
	}
	v, err := strconv.ParseFloat(string(data[i:end]), 64)
	if err != nil {
		return i, false
	}
	*f = v
	return end, true
}

// ReadTime decodes a time as json.Unmarshal does: the quoted token goes
// to time.Time's UnmarshalJSON as it is. Only a string without escapes
// is read.
func ReadTime(data []byte, i int, t *time.Time) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return i, false
	}
	end, ok := ScanString(data, i)
	if !ok || bytes.IndexByte(data[i:end], '\\') >= 0 || t.UnmarshalJSON(data[i:end]) != nil {
		return i, false
	}
	return end, true
}

// ReadRaw decodes raw JSON as json.Unmarshal decodes it into a
// json.RawMessage (a copy of the value's bytes), when it is Compact and
// not null (which json would keep as the word null).
func ReadRaw(data []byte, i int, raw *json.RawMessage) (int, bool) {
	if i >= len(data) || data[i] == 'n' {
		return i, false
	}
	end, ok := ScanValue(data, i)
	if !ok {
		return i, false
	}
	*raw = append(json.RawMessage(nil), data[i:end]...)
	return end, true
}

// ReadStrings decodes an array of strings (ReadString each).
func ReadStrings(data []byte, i int, ss *[]string) (int, bool) {
	out := []string{}
	end, ok := Array(data, i, func(i int) (int, bool) {
		var s string
		i, ok := ReadString(data, i, &s)
		out = append(out, s)
		return i, ok
	})
	if ok {
		*ss = out
	}
	return end, ok
}

// Array reads the array at data[i]: read decodes each element starting
// at data[i] and returns where it ends. An empty array is read too.
func Array(data []byte, i int, read func(i int) (int, bool)) (int, bool) {
	if i >= len(data) || data[i] != '[' {
		return i, false
	}
	i++
	if i < len(data) && data[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = read(i); !ok || i >= len(data) {
			return i, false
		}
		switch data[i] {
		case ',':
			i++
		case ']':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// ReadTrue decodes the word true: a bool field tagged omitempty is
// written only when it is.
func ReadTrue(data []byte, i int, v *bool) (int, bool) {
	end, ok := scanWord(data, i, "true")
	if ok {
		*v = true
	}
	return end, ok
}

// Field reads an object's next key at data[i] (after its opening or a
// comma): a key without escapes, followed by a colon. It returns the
// key and where its value starts.
func Field(data []byte, i int) (key []byte, next int, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, i, false
	}
	end := i + 1
	for end < len(data) && data[end] != '"' && data[end] != '\\' {
		end++
	}
	if end+1 >= len(data) || data[end] != '"' || data[end+1] != ':' {
		return nil, i, false
	}
	return data[i+1 : end], end + 2, true
}

// Object reads the object at data[i] whose keys come in the order keys
// lists them (json.Marshal's order of a struct's fields), each once at
// most: read decodes the value of keys[k] starting at data[i] and returns
// where it ends. Any other key, a key twice or out of order, is not
// read: json.Unmarshal matches keys without regard to case and keeps the
// last of two.
//
// U21: only json.Marshal's form is read; the rest is json.Unmarshal's.
func Object(data []byte, i int, keys []string, read func(k, i int) (int, bool)) (int, bool) {
	if i >= len(data) || data[i] != '{' {
		return i, false
	}
	i++
	if i < len(data) && data[i] == '}' {
		return i + 1, true
	}
	for next := 0; ; {
		key, j, ok := Field(data, i)
		if !ok {
			return i, false
		}
		k := next
		for k < len(keys) && keys[k] != string(key) {
			k++
		}
		if k == len(keys) {
			return i, false
		}
		next = k + 1
		if i, ok = read(k, j); !ok || i >= len(data) {
			return i, false
		}
		switch data[i] {
		case ',':
			i++
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}
