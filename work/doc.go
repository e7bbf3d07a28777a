// Package work is the contract of one task attempt between a run's board
// and whatever runs the attempt: the Attempt that goes out (the task, what
// its worker is supplied, its agent and limits), the Outcome that comes
// back (result, usage, observations, history items, transcript), and the
// seams between them — a Dispatcher that delivers attempts, an Approver
// that answers a worker's calls that need a person, a LogReader for
// transcripts journaled where the worker ran, and Func, the one function
// that runs an attempt's generator (engine.Work).
//
// It holds types only: no transport and no engine. The engine dispatches
// every board task through a Dispatcher (its own in-process one, or a
// transport's such as package natsboard's), and a transport's worker
// process calls a Func it is given. So a transport imports this package,
// never the engine, and every attempt runs the same way however it is
// delivered.
package work
