package engine

import (
	"sync"

	"github.com/fsdrun/fsd/artifact"
	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/tokens"
)

// The reader and board tool definitions never change: build them once.
var (
	readerDefs = sync.OnceValue(artifact.Tools)
	boardDefs  = sync.OnceValue(board.Tools)
)

// maxTokenCache bounds the token-count cache; past it the cache starts
// over, which costs recounts, never memory.
const maxTokenCache = 1 << 14

// tokenCache remembers BPE counts of strings. Every request event counts
// its context block, window and tools, and from one step to the next
// nearly all of them are the same strings: counting each once keeps the
// tokenizer off the per-step path.
//
// One cache serves every run in the process: it memoizes a pure function,
// so sharing it changes no behaviour, and the tool definitions every run
// offers are counted once.
var sharedTokens = &tokenCache{}

type tokenCache struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *tokenCache) count(s string) int {
	if s == "" {
		return 0
	}
	c.mu.Lock()
	n, ok := c.m[s]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = tokens.Count(s)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxTokenCache {
		c.m = make(map[string]int)
	}
	c.m[s] = n
	c.mu.Unlock()
	return n
}
