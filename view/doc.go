// Package view draws a run for a person watching it: a live board that
// redraws in place on a terminal (each task's status, agent, elapsed time
// and tokens, and totals), built from the same event stream that
// `--events json` prints.
//
// It only reads events; it never changes a run. Plain-line progress for
// non-terminals lives with the CLI.
package view
