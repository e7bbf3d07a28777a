package tokens

import (
	_ "embed"
)

// o200kBase is OpenAI's o200k_base vocabulary as a ready-made hash table,
// written by ./internal/vocabgen from o200k_base.tiktoken. It is used in
// place: nothing is parsed or copied at start-up, and only the pages a
// count touches are read from the binary. All integers are little-endian
// uint32:
//
//	n                   number of tokens; ranks are 0…n-1
//	slots               size of the hash table, a power of two
//	offsets[n+1]        token r is data[offsets[r]:offsets[r+1]]
//	table[slots]        0 for an empty slot, else rank+1; a token's slot is
//	                    found from FNV-1a (32 bit) of its bytes by linear
//	                    probing
//	data                the tokens' bytes, in rank order
//
//go:embed o200k_base.bin
var o200kBase string

// vocab is a view of the embedded table.
type vocab struct {
	n, mask int
	offsets string // (n+1) uint32
	table   string // slots uint32
	data    string
}

func newVocab(b string) vocab {
	n, slots := int(u32(b, 0)), int(u32(b, 4))
	offsets := b[8 : 8+4*(n+1)]
	table := b[len(offsets)+8 : len(offsets)+8+4*slots]
	return vocab{n: n, mask: slots - 1, offsets: offsets, table: table, data: b[8+len(offsets)+len(table):]}
}

func u32(b string, i int) uint32 {
	return uint32(b[i]) | uint32(b[i+1])<<8 | uint32(b[i+2])<<16 | uint32(b[i+3])<<24
}

// token returns the bytes of rank r.
func (v *vocab) token(r int) string {
	return v.data[u32(v.offsets, 4*r):u32(v.offsets, 4*r+4)]
}

// noRank is the rank of a byte sequence that is not a token.
const noRank = int(^uint32(0) >> 1)

// rank returns the rank of token s, or noRank.
func (v *vocab) rank(s string) int {
	for i := int(fnv1a(s)) & v.mask; ; i = (i + 1) & v.mask {
		e := u32(v.table, 4*i)
		if e == 0 {
			return noRank
		}
		if r := int(e - 1); v.token(r) == s {
			return r
		}
	}
}

// fnv1a is hash/fnv's 32-bit FNV-1a, without an allocation.
func fnv1a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
