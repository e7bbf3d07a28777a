// Package fanout writes the workflow fsd's scale benchmarks run: a
// fan-out of n tasks, each answered at once by the scripted model, joined
// by one more task, with the limits raised to fit them — the workflow
// bench/fanout.sh generates, for the benchmarks of several packages.
//
// It is for tests and benchmarks only; it runs nothing.
package fanout
