// Package scripted is fsd's built-in model: it replays a script of tool
// calls and answers, so `fsd run` works offline and tests are
// deterministic.
//
// A script (`*.script.yaml`) has a list of steps for the host, one per
// agent, and optional per-task overrides. Every generator replays its own
// list from the first step: the host reads `host`, a board worker reads
// `tasks[<task id>]` if present, else `agents[<agent>]`. Argument strings
// are Go templates over the generator's input, its task, the last tool
// result and a task's dependencies' results (.Deps.ID, and .Deps.ID.field
// for a typed one), with a `handle ID` function that resolves a skill's artifact
// handle. The model is stateless: the step to play is the request's
// Caller.Step, so concurrent workers and retries replay correctly.
package scripted
