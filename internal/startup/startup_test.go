package startup

import (
	"runtime"
	"testing"
)

// TestReserveStack (I1): reserveStack's frame asks for more than half of
// 512 KiB, so a fresh goroutine (a few KiB of stack) that calls it holds
// 512 KiB of stack after, allocated in one growth.
func TestReserveStack(t *testing.T) {
	type inUse struct{ before, after uint64 }
	done := make(chan inUse)
	go func() {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		reserveStack(0)
		runtime.ReadMemStats(&after)
		done <- inUse{before.StackInuse, after.StackInuse}
	}()
	got := <-done
	if grown := int64(got.after) - int64(got.before); grown < 512<<10-64<<10 {
		t.Fatalf("the goroutine's stacks grew by %d bytes, want about 512 KiB: reserveStack's frame no longer asks for the room", grown)
	}
}
