// Package diag is fsd's one diagnostic type: a problem found in a file,
// with the file, line and column it points at, a kind, a message and an
// optional hint. Loading, schema validation and semantic checks all report
// through it, so `fsd validate` can sort, print and count them in one place.
//
// It owns the value, its ordering and the hint for an unknown name (Suggest,
// DidYouMean: one edit-distance helper for manifests' keys and the CLI's
// names alike), not the output formats: those live with the CLI that
// prints them.
package diag
