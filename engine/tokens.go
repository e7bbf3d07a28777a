package engine

import (
	"sync"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/tokens"
)

// The reader and board tool definitions never change: build them once.
var (
	boardDefs = sync.OnceValue(board.Tools)
)

// The token-count cache's bounds: past either it starts over, which
// costs recounts, never memory. A string is held as its own key, so the
// bytes matter as much as the entries: a worker that serves many runs
// would otherwise keep every large answer it ever counted.
const (
	maxTokenCache      = 1 << 14
	maxTokenCacheBytes = 64 << 20
)

// tokenCache remembers BPE counts of strings. Every request event counts
// its context block, window and tools, and from one step to the next
// nearly all of them are the same strings: counting each once keeps the
// tokenizer off the per-step path, however large a message in the window.
// A skill's body (read_skill's channel) and the flow observations each
// task's worker sees are counted through it too: the same texts again.
//
// One cache serves every run in the process: it memoizes a pure function,
// so sharing it changes no behaviour, and the tool definitions every run
// offers are counted once.
var sharedTokens = &tokenCache{}

type tokenCache struct {
	mu    sync.Mutex
	m     map[string]int
	bytes int // the keys' length in all
	// maxBytes bounds bytes (0: maxTokenCacheBytes), so tests can reach
	// it with small strings.
	maxBytes int
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
	limit := c.maxBytes
	if limit == 0 {
		limit = maxTokenCacheBytes
	}
	if len(s) > limit {
		// Counted again when asked again: tokens.Count reads at most
		// tokens.MaxExact bytes of it, so that costs a bounded moment.
		return n
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxTokenCache || c.bytes+len(s) > limit {
		c.m, c.bytes = make(map[string]int), 0
	}
	if _, dup := c.m[s]; !dup { // another goroutine may have counted it too
		c.m[s] = n
		c.bytes += len(s)
	}
	c.mu.Unlock()
	return n
}
