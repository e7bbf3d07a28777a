package engine

import (
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/tokens"
)

// The token-count cache holds its keys, so it bounds their bytes: large
// strings push the others out instead of piling up, and a string larger
// than the whole bound is counted but never held.
func TestTokenCacheBoundsBytes(t *testing.T) {
	testpar.UnlessRace(t)
	c := &tokenCache{maxBytes: 1000}
	for i := range 10 {
		s := strings.Repeat(string(rune('a'+i)), 300)
		if got, want := c.count(s), tokens.Count(s); got != want {
			t.Fatalf("count = %d, want %d", got, want)
		}
		if _, held := c.m[s]; !held {
			t.Errorf("string %d is not held", i)
		}
		if c.bytes > 1000 {
			t.Fatalf("after %d strings the cache holds %d bytes, over its bound of 1000", i+1, c.bytes)
		}
	}
	big := strings.Repeat("z ", 1000)
	if got, want := c.count(big), tokens.Count(big); got != want {
		t.Fatalf("count = %d, want %d", got, want)
	}
	if _, held := c.m[big]; held || c.bytes > 1000 {
		t.Errorf("a string over the bound is held (cache: %d bytes)", c.bytes)
	}
}
