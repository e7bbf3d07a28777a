// Package proctest holds what tests need to watch the programs fsd starts:
// whether a process still runs (a zombie waiting for its reaper does not),
// waiting for one to end, and reading the pid a program wrote. Tests of
// tool, mcptool and internal/proc share it.
//
// Its waits are bounded loops with no timing assertion: a loaded machine
// makes them slower, never wrong. It is for tests only.
package proctest
