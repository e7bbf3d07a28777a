// Package diag is fsd's one diagnostic type: a problem found in a file,
// with the file, line and column it points at, a kind, a message and an
// optional hint. Loading, schema validation and semantic checks all report
// through it, so `fsd validate` can sort, print and count them in one place.
//
// It owns the value and its ordering, not the output formats: those live
// with the CLI that prints them.
package diag
