// Package chaos is a seeded, reproducible model.Model that misbehaves on
// purpose: property tests run the engine against it to check that no
// sequence of model actions breaks an invariant of docs/design.md.
//
// Given a request, it answers with random valid and invalid actions: calls
// of the offered tools with plausible arguments, unknown tools, tools of
// skills that were unloaded, wrong-typed, missing, non-object and huge
// arguments, read_skill of enabled, disabled and malformed ids, reader calls
// with current, stale and forged handles, board calls with unknown
// assignees, unknown dependencies and cycles, runBoard, cancelTask of random
// ids, several calls in one response, empty responses, scripted model
// errors, and final answers. What it knows it learns from the request
// itself: skill ids from the catalog, handles from pointers and receipts,
// task ids and the roster from board results.
//
// Each answer is a pure function of the seed and the request: its random
// source is derived from hash(seed, agent, task, step), never from shared
// mutable state, so concurrent board workers cannot change what a given
// generator is told to do, and a failing seed replays.
//
// It is a test double, not a benchmark model: it makes no attempt to do the
// task, and it is not tuned to any provider's habits.
package chaos
