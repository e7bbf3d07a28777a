package jsonw

import (
	"encoding/json"
	"testing"
)

// TestCompact: Compact is true only for one JSON value written as
// json.Marshal writes raw JSON, the form a reader copies as it is.
func TestCompact(t *testing.T) {
	for raw, want := range map[string]bool{
		`{}`: true, `[]`: true, `{"a":[1,-0.5e+3,"x\"y\u00e9",true,false,null],"b":{}}`: true, `"é"`: true,
		``: false, ` {}`: false, `{"a": 1}`: false, `"<"`: false, `"a&b"`: false, "\"\u2028\"": false,
		"\"\xff\"": false, `[1,2`: false, `nul`: false, `{"a":1}{"b":2}`: false, `01`: false, `1.`: false,
		`"\x"`: false, `"\u12"`: false, "\"a\nb\"": false, `{"a"}`: false, `[1,]`: false, `-`: false,
	} {
		if got := Compact([]byte(raw)); got != want {
			t.Errorf("Compact(%q) = %v, want %v", raw, got, want)
		}
	}
}

type readSample struct {
	N  int             `json:"n,omitempty"`
	S  string          `json:"s,omitempty"`
	F  float64         `json:"f,omitempty"`
	B  bool            `json:"b,omitempty"`
	R  json.RawMessage `json:"r,omitempty"`
	SS []string        `json:"ss,omitempty"`
}

var readSampleKeys = []string{"n", "s", "f", "b", "r", "ss"}

// readSampleFast decodes data into v when it is in the readers' form.
func readSampleFast(data []byte, v *readSample) bool {
	end, ok := Object(data, 0, readSampleKeys, func(k, i int) (int, bool) {
		switch readSampleKeys[k] {
		case "n":
			return ReadInt(data, i, &v.N)
		case "s":
			return ReadString(data, i, &v.S)
		case "f":
			return ReadFloat(data, i, &v.F)
		case "b":
			return ReadTrue(data, i, &v.B)
		case "r":
			return ReadRaw(data, i, &v.R)
		}
		return ReadStrings(data, i, &v.SS)
	})
	return ok && end == len(data)
}

func readSampleFrom(data []byte, v *readSample) error {
	if readSampleFast(data, v) {
		return nil
	}
	*v = readSample{}
	return json.Unmarshal(data, v)
}

// TestReaders: a decoder built from Object and the readers takes the form
// json.Marshal writes, and leaves the rest to json.Unmarshal.
func TestReaders(t *testing.T) {
	for in, fast := range map[string]bool{
		`{}`: true, `{"n":-12,"s":"a\u003cb\n","f":1.5e-7,"b":true,"r":{"x":[1,"y"]},"ss":["a","é"]}`: true, `{"ss":[]}`: true,
		`{"s":"x","n":1}`: false, `{"n":1,"n":2}`: false, `{"N":1}`: false, `{"n": 1}`: false, `{"b":false}`: false,
		`{"r":null}`: false, `{"f":1e400}`: false, `{"n":1e3}`: false, `{"n":99999999999999999999}`: false,
		`{"s":"\ud800"}`: true, "{\"s\":\"\xff\"}": true, `{"n":1}x`: false, `{"x":1}`: false,
	} {
		var v readSample
		if got := readSampleFast([]byte(in), &v); got != fast {
			t.Errorf("%s: read without json.Unmarshal %v, want %v", in, got, fast)
		}
		if err := CompareDecode([]byte(in), readSampleFrom); err != nil {
			t.Error(err)
		}
	}
}

// FuzzReaders: a decoder built from Object and the readers decodes what
// json.Unmarshal decodes, and fails where it fails.
func FuzzReaders(f *testing.F) {
	AddSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := CompareDecode(data, readSampleFrom); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzReadString: ReadString decodes the string token "data" as
// json.Unmarshal does (escapes, surrogates paired or lone, invalid UTF-8,
// control characters, an escape json refuses), and refuses it where
// json does.
func FuzzReadString(f *testing.F) {
	for _, s := range []string{``, `plain`, `\"\\\/\b\f\n\r\t`, `\u00e9\ud83c\udf89`, `\ud800`, `\udc00\ud800x`, `\ud800\u0041`,
		`\ud83c\udf8`, `\u12`, `\'`, `\x`, "\x01", "\xff\xfe", "\xed\xa0\x80", `<&>`, "\u2028", `a"b`, `\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tok := append(append([]byte{'"'}, data...), '"')
		var got, want string
		end, ok := ReadString(tok, 0, &got)
		werr := json.Unmarshal(tok, &want)
		if ok && end != len(tok) {
			// The token ended early (a quote inside): json refuses the rest.
			if werr == nil {
				t.Fatalf("%q: ReadString ended at %d of %d, json.Unmarshal read it all", tok, end, len(tok))
			}
			return
		}
		if ok != (werr == nil) || ok && got != want {
			t.Fatalf("%q: ReadString %q, %v; json.Unmarshal %q, %v", tok, got, ok, want, werr)
		}
		// Read out of the token's own text, the string is the same.
		var of string
		if endOf, okOf := ReadStringOf(tok, string(tok), 0, &of); endOf != end || okOf != ok || of != got {
			t.Fatalf("%q: ReadStringOf %q, %d, %v; ReadString %q, %d, %v", tok, of, endOf, okOf, got, end, ok)
		}
	})
}
