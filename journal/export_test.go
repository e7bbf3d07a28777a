package journal

import "os"

// withSync makes fn the writer's fdatasync, for tests that count, watch or
// hold its commits; fn calls fdatasync itself when the line must be durable.
func withSync(fn func(*os.File) error) WriterOption {
	return func(w *Writer) { w.sync = fn }
}
