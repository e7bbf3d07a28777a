package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWriteAndRead: writers and a reader at once (run with
// -race) lose no write.
func TestConcurrentWriteAndRead(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.String(), "x"); got != 400 {
		t.Errorf("%d bytes written, want 400", got)
	}
}
