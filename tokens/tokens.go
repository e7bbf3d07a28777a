package tokens

import (
	"sync"
	"sync/atomic"

	"github.com/tiktoken-go/tokenizer"
)

// The codec holds a 200k-entry vocabulary and a compiled split regexp: far
// too costly to build per call, and immutable once built, so one instance
// is shared. It is built on first use rather than at init so programs that
// never count tokens (fsd validate) do not pay for it.
var codec = sync.OnceValue(func() tokenizer.Codec {
	loaded.Store(true)
	c, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		// O200kBase is compiled into the library; Get fails only for
		// encodings it does not know. Count falls back to an estimate.
		return nil
	}
	// Invalid UTF-8 counts as U+FFFD, as tiktoken does by default, instead
	// of failing the count.
	c.SetErrorMode(tokenizer.ErrorModeReplace)
	return c
})

// loaded records that the vocabulary was built in this process.
var loaded atomic.Bool

// Loaded reports whether this process has built the vocabulary (about
// 25 ms and several MiB): tests and benchmarks use it to show that a run
// whose provider reports usage never counts tokens.
func Loaded() bool { return loaded.Load() }

// Encoding names the vocabulary Count uses.
const Encoding = "o200k_base"

// Count returns the number of o200k_base tokens in s. It is safe for
// concurrent use.
func Count(s string) int {
	if s == "" {
		return 0
	}
	if c := codec(); c != nil {
		if n, err := c.Count(s); err == nil {
			return n
		}
	}
	// Unreachable with the embedded vocabulary; a rough estimate beats
	// reporting zero.
	return (len(s) + 3) / 4
}
