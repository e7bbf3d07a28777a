// Package engine runs a workflow: it keeps the catalog of enabled skills
// (reloading manifests that change on disk), the skill manager (which skills
// are loaded, their channels, per-load state and run-wide store), assembles
// every model request from the current state, and drives the generator loop
// of the host and of each board worker.
//
// It does not parse manifests (spec), window transcripts (transcript), index
// markdown (artifact), schedule tasks (board), wait for approvals
// (approval: the generator asks its Gate before a call runs; a Run answers
// through it) or talk to providers (model/…): it wires them together, and it
// is the only package that knows the order in which things happen in a step.
//
// Every board task attempt runs by one path (dispatch.go, attempt.go):
// the board's runner makes a work.Attempt, a work.Dispatcher delivers
// it — the run's in-process one, or a transport's such as package
// natsboard's — and runAttempt runs its generator, in this process or
// in a worker process through Work. The outcome's usage, observations,
// history items and transcript are folded back into the run and its
// record the same way for both. The engine knows no transport.
//
// Invariants enforced here (docs/design.md): L1–L5 (lifecycle), C1–C4
// (catalog and reads), H1–H5 (channels and reclaim), W3–W4 (request
// assembly), D1, D4–D8 (workers).
package engine
