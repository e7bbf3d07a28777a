package tokens

import (
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// The vocabulary is a table embedded in the binary and read in place
// (vocab.go), so there is nothing to build per process but the split
// pattern, compiled on first use.
var o200k = sync.OnceValue(func() *vocab {
	loaded.Store(true)
	v := newVocab(o200kBase)
	return &v
})

// loaded records that this process has counted tokens.
var loaded atomic.Bool

// Loaded reports whether this process has counted tokens (and so touched
// the vocabulary's pages and compiled the split pattern): tests and
// benchmarks use it to show that a run whose provider reports usage
// never counts tokens.
func Loaded() bool { return loaded.Load() }

// Encoding names the vocabulary Count uses.
const Encoding = "o200k_base"

// MaxExact is how many bytes of a text Count counts exactly; the rest is
// estimated at the tokens per byte of the counted part. It bounds what
// one count costs, whatever the text's size: about 0.1 s of CPU for the
// worst text (letters without a space) and a few milliseconds for prose.
// 256 KiB is about 64,000 tokens of prose, and the estimate of a longer
// text was within 3 % of the exact count on this repository's Go and
// Markdown (bytes/4, the usual rule of thumb, was 14 % off on the Go); no
// decision fsd makes on a count (spool a result, inline a skill, stay in
// a budget) turns on a few percent of a text that large.
const MaxExact = 256 << 10

// Count returns the number of o200k_base tokens in s, as tiktoken's
// encode_ordinary would make them (special tokens such as <|endoftext|>
// count as the text they are). Invalid UTF-8 counts as U+FFFD, as
// tiktoken does with errors="replace". It is safe for concurrent use.
//
// Two bounds keep its cost linear in len(s), and capped: a run of more
// than 2 KiB without a space is merged in chunks (maxPiece; within 0.3 %
// of tiktoken's count), and a text over MaxExact bytes is estimated.
func Count(s string) int {
	if s == "" {
		return 0
	}
	if len(s) <= MaxExact {
		return count(s)
	}
	cut := MaxExact
	// Cut at a rune's start, so the prefix's last rune is whole (a UTF-8
	// sequence is at most 4 bytes; invalid text is cut anywhere).
	for k := 0; k < utf8.UTFMax-1 && !utf8.RuneStart(s[cut]); k++ {
		cut--
	}
	n := count(s[:cut])
	rest := int64(len(s) - cut)
	return n + int((rest*int64(n)+int64(cut)-1)/int64(cut))
}

// count counts s exactly (up to maxPiece's chunking).
func count(s string) int {
	v := o200k()
	n := 0
	pieces(validUTF8(s), func(p string) { n += v.countPiece(p) })
	return n
}
