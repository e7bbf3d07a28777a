// Package natsboard spreads one run's task board over worker processes
// through NATS JetStream: `fsd run --nats URL` and
// `fsd worker --nats URL`.
//
// It owns the wire format (Message, Outcome), the JetStream resources
// (a work-queue stream of task messages, a key-value bucket of results,
// an object store of skill files) and both ends: the Coordinator, a
// work.Dispatcher that publishes a task attempt and waits for its
// result, and the Worker, which takes task messages, loads the task's
// skill from the object store (content-addressed, digest-checked, cached
// on disk) and runs it with the work.Func it is given (engine.Work).
//
// Guarantees: delivery is at least once (explicit acks; a running task
// sends in-progress heartbeats, and a message whose worker died is
// delivered again after the ack wait, at most Message.MaxDeliveries
// times, after which the task fails softly); completion is exactly once:
// a result is committed with a create-only compare-and-set on the key
// run/task/attempt, and later results for the same key are discarded.
// Worker events are best effort (at most once), sent in batches; the last
// batch rides in the outcome. A task's transcript is journaled to the
// stream JournalStream, a step's entries to a message, fenced by delivery
// (AttemptLog; see journal.go); the outcome carries it inline when it is
// small, for the coordinator's run record (transcript.go), and then makes
// the final answer durable, which does not wait for the journal. cancelTask reaches the worker running the task by
// request/reply on the attempt's cancel subject; nothing else the
// coordinator does stops a remote task (see cancel.go). A call that needs
// approval is asked of the coordinator by request/reply on the attempt's
// approvals subject and answered by the run's own approvals (see
// approvals.go); a worker never runs it unapproved.
//
// It does not schedule (package board does, in the coordinator), run
// generators (package engine) nor parse flags (cmd/fsd). It never sends
// credentials: a worker's model keys come from its own environment, and
// a skill's command tools and stdio MCP servers run on a worker only when
// the worker trusts that skill's exact content (its --trust folders).
package natsboard
