package tokens

import (
	"sync"
	"sync/atomic"
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

// Count returns the number of o200k_base tokens in s, as tiktoken's
// encode_ordinary would make them (special tokens such as <|endoftext|>
// count as the text they are). Invalid UTF-8 counts as U+FFFD, as
// tiktoken does with errors="replace". It is safe for concurrent use.
func Count(s string) int {
	if s == "" {
		return 0
	}
	v := o200k()
	n := 0
	pieces(validUTF8(s), func(p string) { n += v.countPiece(p) })
	return n
}
