// Package board is a private task board: a DAG of delegated tasks checked
// when they are added (assignee, dependencies, cycles, caps) and run
// concurrently under a limit, each task starting once every dependency has
// completed and receiving their results.
//
// It owns task state, scheduling, per-task timeouts and retries, the board
// tools a generator calls (addTask, listTasks, cancelTask, runBoard, D1–D3)
// and the Mermaid/DOT rendering of a static board. It does not know what a
// worker is: the engine passes a Runner that runs one task (a generator),
// and the board treats assignees as opaque strings checked against a
// roster. Context supply and flow policy live in package supply, item
// routing in package visibility.
//
// Two pieces serve runners that hand tasks to other processes (fsd run
// --nats): a cancelled task's context ends with the cause
// ErrTaskCancelled, so such a runner stops the remote task, while a run
// that ends otherwise leaves it running for a resume; and Slots is the
// same concurrency limit, with Park and Leave, for a process that runs
// tasks outside a board (fsd worker --concurrency).
package board
