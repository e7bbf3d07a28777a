package telemetry

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// The protobuf wire format's few primitives OTLP needs, as protowire
// writes and reads them (protobuf-go's encoding/protowire, the
// encoding's specification at protobuf.dev/programming-guides/encoding).
// Importing protowire would initialise the protobuf module's detrand in
// every fsd process, which opens and reads the fsd binary to seed
// itself; TestWireMatchesProtowire holds these to protowire's output and
// answers (I5).

// number is a field number; wireType is how its value is written.
type (
	number   int32
	wireType int8
)

const (
	varintType     wireType = 0
	fixed64Type    wireType = 1
	bytesType      wireType = 2
	startGroupType wireType = 3
	endGroupType   wireType = 4
	fixed32Type    wireType = 5
)

// maxGroupDepth bounds nested groups when a field is skipped, as
// protowire's default recursion limit does.
const maxGroupDepth = 10000

func appendTag(b []byte, num number, typ wireType) []byte {
	return appendRawVarint(b, uint64(num)<<3|uint64(typ&7))
}

func appendRawVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// sizeVarint is the length of v written as a varint: 7 bits a byte.
func sizeVarint(v uint64) int {
	return int(9*uint32(bits.Len64(v))+64) / 64
}

func appendRawFixed32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }

func appendRawFixed64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

func appendRawBytes(b []byte, v []byte) []byte {
	return append(appendRawVarint(b, uint64(len(v))), v...)
}

func appendRawString(b []byte, v string) []byte {
	return append(appendRawVarint(b, uint64(len(v))), v...)
}

// The consume functions return a value and the bytes it took, or a
// negative length when b does not hold one.

func consumeVarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < 10 && i < len(b); i++ {
		c := b[i]
		if i == 9 && c > 1 {
			return 0, -1 // overflows 64 bits
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, -1
}

func consumeTag(b []byte) (number, wireType, int) {
	v, n := consumeVarint(b)
	if n < 0 {
		return 0, 0, n
	}
	num := v >> 3
	if num < 1 || num > math.MaxInt32 {
		return 0, 0, -1
	}
	return number(num), wireType(v & 7), n
}

func consumeBytes(b []byte) ([]byte, int) {
	l, n := consumeVarint(b)
	if n < 0 || l > uint64(len(b)-n) {
		return nil, -1
	}
	return b[n : n+int(l)], n + int(l)
}

func consumeString(b []byte) (string, int) {
	v, n := consumeBytes(b)
	return string(v), n
}

// consumeFieldValue is the length of field num's value of type typ at
// the start of b, a group's up to its end tag included.
func consumeFieldValue(num number, typ wireType, b []byte) int {
	return consumeValue(num, typ, b, maxGroupDepth)
}

func consumeValue(num number, typ wireType, b []byte, depth int) int {
	switch typ {
	case varintType:
		_, n := consumeVarint(b)
		return n
	case fixed32Type:
		if len(b) < 4 {
			return -1
		}
		return 4
	case fixed64Type:
		if len(b) < 8 {
			return -1
		}
		return 8
	case bytesType:
		_, n := consumeBytes(b)
		return n
	case startGroupType:
		if depth < 0 {
			return -1
		}
		total := 0
		for {
			num2, typ2, n := consumeTag(b)
			if n < 0 {
				return -1
			}
			b, total = b[n:], total+n
			if typ2 == endGroupType {
				if num2 != num {
					return -1
				}
				return total
			}
			n = consumeValue(num2, typ2, b, depth-1)
			if n < 0 {
				return -1
			}
			b, total = b[n:], total+n
		}
	}
	return -1
}
