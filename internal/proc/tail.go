package proc

import (
	"sync"
	"unicode/utf8"
)

// Tail keeps the last Max bytes written to it: a program's stderr, whose
// end says why it failed, at a bounded cost however much it prints. It is
// safe for concurrent use (a long-running server writes while a failed
// call reads).
type Tail struct {
	// Max is how many bytes String returns at most.
	Max int

	mu  sync.Mutex
	buf []byte
}

// NewTail returns a Tail keeping max bytes.
func NewTail(max int) *Tail { return &Tail{Max: max} }

// Write keeps p's end; it never fails, so the program runs as it would
// unobserved.
func (w *Tail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	// Trim only past twice the bound, so a stream of small writes is not
	// copied on each one.
	if len(w.buf) > 2*w.Max {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-w.Max:]...)
	}
	return len(p), nil
}

// String returns the last Max bytes, not starting on half a character.
func (w *Tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.buf
	if len(b) > w.Max {
		b = b[len(b)-w.Max:]
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return string(b)
}
