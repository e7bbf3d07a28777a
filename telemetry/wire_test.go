package telemetry

import (
	"bytes"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// varints covers each length a varint can take and its edges.
var varints = func() []uint64 {
	vs := []uint64{0, 1, math.MaxUint32, math.MaxInt64, math.MaxUint64}
	for s := 7; s < 64; s += 7 {
		vs = append(vs, 1<<s-1, 1<<s, 1<<s+1)
	}
	return vs
}()

// TestWireMatchesProtowire: the primitives write what protowire writes,
// and read back what they wrote.
func TestWireMatchesProtowire(t *testing.T) {
	for _, v := range varints {
		if got, want := appendRawVarint(nil, v), protowire.AppendVarint(nil, v); !bytes.Equal(got, want) {
			t.Errorf("varint %d: %x, protowire %x", v, got, want)
		}
		if got, want := sizeVarint(v), protowire.SizeVarint(v); got != want {
			t.Errorf("size of varint %d: %d, protowire %d", v, got, want)
		}
		if got, n := consumeVarint(appendRawVarint([]byte{}, v)); got != v || n != protowire.SizeVarint(v) {
			t.Errorf("varint %d read back as %d (%d bytes)", v, got, n)
		}
		if got, want := appendRawFixed64(nil, v), protowire.AppendFixed64(nil, v); !bytes.Equal(got, want) {
			t.Errorf("fixed64 %d: %x, protowire %x", v, got, want)
		}
		if got, want := appendRawFixed32(nil, uint32(v)), protowire.AppendFixed32(nil, uint32(v)); !bytes.Equal(got, want) {
			t.Errorf("fixed32 %d: %x, protowire %x", uint32(v), got, want)
		}
	}
	for _, num := range []number{1, 15, 16, 2047, 2048, 1<<29 - 1, math.MaxInt32} {
		for typ := varintType; typ <= fixed32Type; typ++ {
			got, want := appendTag(nil, num, typ), protowire.AppendTag(nil, protowire.Number(num), protowire.Type(typ))
			if !bytes.Equal(got, want) {
				t.Errorf("tag %d/%d: %x, protowire %x", num, typ, got, want)
			}
		}
	}
	for _, s := range []string{"", "a", string(make([]byte, 200))} {
		if got, want := appendRawString(nil, s), protowire.AppendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("string of %d bytes: %x, protowire %x", len(s), got, want)
		}
		if got, want := appendRawBytes(nil, []byte(s)), protowire.AppendBytes(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Errorf("bytes of %d: %x, protowire %x", len(s), got, want)
		}
	}
	// Reading: well-formed fields, groups, and each way of being short or
	// out of range.
	inputs := [][]byte{
		nil, {0x08, 0x96, 0x01}, {0x08, 0x96}, {0x00}, {0x07},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
		{0xf8, 0xff, 0xff, 0xff, 0x0f, 0x00}, {0xf8, 0xff, 0xff, 0xff, 0x1f, 0x00},
		{0x12, 0x03, 'a', 'b', 'c'}, {0x12, 0x04, 'a', 'b', 'c'}, {0x12, 0xff},
		{0x0d, 1, 2, 3, 4}, {0x0d, 1, 2, 3}, {0x09, 1, 2, 3, 4, 5, 6, 7, 8}, {0x09, 1, 2},
		{0x0b, 0x08, 0x01, 0x0c}, {0x0b, 0x08, 0x01, 0x14}, {0x0b, 0x08, 0x01}, {0x0c}, {0x0e}, {0x0f},
		{0x0b, 0x13, 0x1b, 0x1c, 0x14, 0x0c},
	}
	for _, in := range inputs {
		checkConsume(t, in)
	}
}

// checkConsume compares each reading primitive with protowire's on b:
// the same value where protowire reads one, and a failure where it fails.
func checkConsume(t *testing.T, b []byte) {
	t.Helper()
	v, n := consumeVarint(b)
	pv, pn := protowire.ConsumeVarint(b)
	if (n < 0) != (pn < 0) || (n >= 0 && (v != pv || n != pn)) {
		t.Errorf("varint of %x: %d (%d), protowire %d (%d)", b, v, n, pv, pn)
	}
	bs, n := consumeBytes(b)
	pbs, pn := protowire.ConsumeBytes(b)
	if (n < 0) != (pn < 0) || (n >= 0 && (!bytes.Equal(bs, pbs) || n != pn)) {
		t.Errorf("bytes of %x: %x (%d), protowire %x (%d)", b, bs, n, pbs, pn)
	}
	num, typ, n := consumeTag(b)
	pnum, ptyp, pn := protowire.ConsumeTag(b)
	if (n < 0) != (pn < 0) || (n >= 0 && (int32(num) != int32(pnum) || int8(typ) != int8(ptyp) || n != pn)) {
		t.Errorf("tag of %x: %d/%d (%d), protowire %d/%d (%d)", b, num, typ, n, pnum, ptyp, pn)
	}
	if n < 0 || pn < 0 {
		return
	}
	fn, pfn := consumeFieldValue(num, typ, b[n:]), protowire.ConsumeFieldValue(pnum, ptyp, b[n:])
	if (fn < 0) != (pfn < 0) || (fn >= 0 && fn != pfn) {
		t.Errorf("field value after %x's tag: %d bytes, protowire %d", b, fn, pfn)
	}
}

// FuzzWire holds the reading primitives to protowire's on any input: a
// collector's answer is read with them.
func FuzzWire(f *testing.F) {
	f.Add([]byte{0x0a, 0x05, 0x08, 0x02, 0x12, 0x01, 'x'})
	f.Add([]byte{0x0b, 0x08, 0x01, 0x0c})
	f.Fuzz(func(t *testing.T, b []byte) {
		checkConsume(t, b)
		partialSuccess(b) // any answer: read or ignored, never a panic
	})
}
