// Package startup prepares the process for the work every fsd command
// does before it reads a flag: the linked packages' initialisation, the
// JSON Schema library's compile of its meta-schemas above all, which
// recurses deeply on the main goroutine and fills the first megabytes of
// heap. It maps the start's heap with huge pages (on Linux) and grows the
// main goroutine's stack once. cmd/fsd imports it for its initialisation
// alone, which runs before those packages' (a package is initialised as
// soon as its imports are, in import path order, and this one imports
// only the runtime and syscall).
//
// It is not a place for work a command needs: what it does must cost less
// than it saves in every command, `fsd version` included.
package startup
