package jsonw

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"time"
)

// Vary sets the exported fields of the struct ptr points to from data, a
// fuzzer's bytes: each field is left zero or given a value the encoders
// must treat as json.Marshal does — text that needs escaping or is not
// UTF-8, a very long string, NaN and infinite floats, nil against empty
// slices and maps, raw JSON that json compacts or refuses, times json
// cannot write. Fill sets one value of each field; Vary reaches the
// corners a fuzz test compares an appender with json.Marshal on. The
// same data always gives the same value.
func Vary(ptr any, data []byte) {
	v := &varier{data: data}
	v.vary(reflect.ValueOf(ptr).Elem(), 0)
}

type varier struct {
	data []byte
}

// next is the next byte of data, 0 once it is spent: a short input
// leaves the rest of the value zero.
func (v *varier) next() byte {
	if len(v.data) == 0 {
		return 0
	}
	b := v.data[0]
	v.data = v.data[1:]
	return b
}

// take is the next n bytes of data, or as many as are left.
func (v *varier) take(n int) []byte {
	n = min(n, len(v.data))
	b := v.data[:n]
	v.data = v.data[n:]
	return b
}

var hostileStrings = []string{
	"", "plain", `"q" \b\`, "<a>&amp;</a>", "\x00\x01\x1f\x7f\b\f\n\r\t",
	"\u2028\u2029", "\xff\xfe", "\xed\xa0\x80", // a lone surrogate, as UTF-8 encodes it
	"\xe2\x82", "é 日本 🎉", "\ufffd", "t1", "\"t1\"",
}

// rawValues are json.RawMessage values: spaced and escaped JSON json
// compacts, text that is not JSON, and nothing.
var rawValues = []string{
	`{}`, ` { "a&b" : [ 1 , "<x>" , null ] } `, `"\u2028 \ud800"`, "\"\xff\"", `1e400`,
	`[1,2`, `nul`, ``, "\"\u2028\"", `{"a":1}{"b":2}`, "\t\n[]\n",
}

var hostileFloats = []float64{
	0, math.Copysign(0, -1), 0.1, -1, 1e20, 1e21, 1e-6, 9.99e-7, 1e-9,
	math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1),
}

var hostileTimes = []time.Time{
	{},
	time.Date(2026, 12, 2, 3, 4, 5, 60700, time.UTC),
	time.Date(2026, 6, 1, 12, 0, 0, 5, time.FixedZone("x", -7*3600)),
	time.Date(1900, 1, 1, 0, 0, 0, 0, time.FixedZone("lmt", 17*60+30)), // an offset in seconds
	time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),                       // no RFC 3339 year
	time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 24*3600)), // no RFC 3339 offset
	time.Unix(1e9, 1).In(time.FixedZone("half", 5*3600+30*60)),
}

func (v *varier) vary(f reflect.Value, depth int) {
	if depth > 6 {
		return
	}
	c := v.next()
	switch {
	case f.Type() == timeType:
		f.Set(reflect.ValueOf(hostileTimes[int(c)%len(hostileTimes)]))
		return
	case f.Type() == rawType:
		if c%4 == 3 {
			f.SetBytes(v.take(int(v.next() % 32)))
		} else if i := int(c) % (len(rawValues) + 1); i < len(rawValues) {
			f.SetBytes([]byte(rawValues[i]))
		} else {
			f.SetBytes([]byte{}) // empty, not nil
		}
		return
	}
	switch f.Kind() {
	case reflect.String:
		switch {
		case c < 128:
			f.SetString(hostileStrings[int(c)%len(hostileStrings)])
		case c < 250:
			f.SetString(string(v.take(int(c - 128))))
		default:
			f.SetString(string(bytes.Repeat([]byte(hostileStrings[int(c)%len(hostileStrings)]+"x"), 5000)))
		}
	case reflect.Bool:
		f.SetBool(c&1 == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		switch c % 4 {
		case 0:
			f.SetInt(0)
		case 1:
			f.SetInt(int64(int8(v.next())))
		case 2:
			f.SetInt(math.MinInt64 >> (64 - f.Type().Bits()))
		case 3:
			f.SetInt(math.MaxInt64 >> (64 - f.Type().Bits()))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		f.SetUint(uint64(v.next()))
	case reflect.Float32, reflect.Float64:
		if c < 200 {
			f.SetFloat(hostileFloats[int(c)%len(hostileFloats)])
		} else {
			var b [8]byte
			copy(b[:], v.take(8))
			f.SetFloat(math.Float64frombits(binary.LittleEndian.Uint64(b[:])))
		}
	case reflect.Pointer:
		if c%2 == 0 {
			return
		}
		p := reflect.New(f.Type().Elem())
		v.vary(p.Elem(), depth+1)
		f.Set(p)
	case reflect.Slice:
		if c%4 == 0 {
			return
		}
		n := int(c%4) - 1 // empty and not nil, one or two
		s := reflect.MakeSlice(f.Type(), n, n)
		for i := range n {
			v.vary(s.Index(i), depth+1)
		}
		f.Set(s)
	case reflect.Map:
		if c%3 == 0 {
			return
		}
		m := reflect.MakeMap(f.Type())
		for range int(c%3) - 1 {
			k := reflect.New(f.Type().Key()).Elem()
			e := reflect.New(f.Type().Elem()).Elem()
			v.vary(k, depth+1)
			v.vary(e, depth+1)
			m.SetMapIndex(k, e)
		}
		f.Set(m)
	case reflect.Struct:
		for i := 0; i < f.NumField(); i++ {
			if f.Type().Field(i).IsExported() {
				v.vary(f.Field(i), depth+1)
			}
		}
	}
}

// AddSeeds adds to a fuzz test's corpus (f is its *testing.F) inputs
// for Vary, so that go test, without -fuzz, already compares an appender
// with json.Marshal over every table above: a run of each byte value and
// a fixed set of pseudo-random inputs.
func AddSeeds(f interface{ Add(args ...any) }) {
	for c := range 256 {
		f.Add(bytes.Repeat([]byte{byte(c)}, 96))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 256 {
		b := make([]byte, 32+r.IntN(224))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
}

// Compare draws a value of T from data (Vary) and encodes it with encode
// and with json.Marshal: nil when both fail or both write the same bytes,
// else an error that shows the two. A fuzz test of an appender is this
// on each input.
func Compare[T any](data []byte, encode func(*T) ([]byte, error)) error {
	var v T
	Vary(&v, data)
	want, werr := json.Marshal(v)
	got, gerr := encode(&v)
	switch {
	case (werr != nil) != (gerr != nil):
		return fmt.Errorf("the appender's error %v, json.Marshal's %v\n got %.300s", gerr, werr, got)
	case werr == nil && !bytes.Equal(got, want):
		return fmt.Errorf("the appender and json.Marshal differ\n got %.300s\nwant %.300s", got, want)
	}
	return nil
}

// CompareDecode decodes with decode and with json.Unmarshal, each into a
// zero T, data itself and what json.Marshal writes for a value of T drawn
// from data (Vary): nil when both fail or both give equal values, else an
// error that shows the two. A fuzz test of a decoder is this on each
// input.
//
// U21: a decoder holds what json.Unmarshal gives, or fails where it fails.
func CompareDecode[T any](data []byte, decode func([]byte, *T) error) error {
	var v T
	Vary(&v, data)
	inputs := [][]byte{data}
	if b, err := json.Marshal(v); err == nil {
		inputs = append(inputs, b)
	}
	for _, in := range inputs {
		var got, want T
		gerr, werr := decode(in, &got), json.Unmarshal(in, &want)
		if (gerr != nil) != (werr != nil) {
			return fmt.Errorf("%.300s: the decoder's error %v, json.Unmarshal's %v", in, gerr, werr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			return fmt.Errorf("%.300s: the decoder and json.Unmarshal differ\n got %#v\nwant %#v", in, got, want)
		}
	}
	return nil
}
