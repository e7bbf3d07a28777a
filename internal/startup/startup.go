package startup

func init() {
	// The heap first: its collection would shrink a stack grown before.
	hugeHeap()
	reserveStack(0)
}

// reserveStack (I1) grows the calling goroutine's stack to 512 KiB in
// one step while only a few frames are on it. Left to itself the main
// goroutine doubles its stack from a few KiB to 512 KiB during the
// packages' initialisation, copying ever deeper stacks (their frames
// walked, pointers adjusted) and touching each intermediate stack's
// pages; here the runtime copies a few frames once. The arrays are
// declared on a path that is not taken, so nothing writes to them: the
// frame only makes the prologue ask for the room, and pages the stack
// does not reach are never touched. Each array stays under the
// compiler's limit for a stack variable (128 KiB), past which it would
// move to the heap and the frame would not ask for the room.
//
//go:noinline
func reserveStack(n int) int {
	if n <= 0 {
		return 0
	}
	var a, b, c [100 << 10]byte
	i := n % len(a)
	a[i], b[i], c[i] = 1, 2, 3
	return int(a[n%7]) + int(b[n%11]) + int(c[n%13])
}
