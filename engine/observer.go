package engine

import (
	"context"

	"github.com/fsdrun/fsd/model"
)

// Observer watches a run as it happens: the run, each generator (the host
// or a task's worker), each model call and each tool call. Each method is
// called when the work starts and returns the context the work runs with
// (so work started inside nests under it) and a function to call when it
// ends. The telemetry package implements it with OpenTelemetry spans.
//
// A nil Options.Observer observes nothing and costs nothing: the engine
// checks for nil before building anything for it. Methods are called from
// many goroutines (board workers run concurrently).
type Observer interface {
	// Run starts with the run; workflow is its name.
	Run(ctx context.Context, runID, workflow string) (context.Context, func(answer string, err error))
	// Agent starts with a generator's loop; c names the host (Agent "")
	// or the task and its agent.
	Agent(ctx context.Context, c model.Caller) (context.Context, func(answer string, err error))
	// Chat starts with a model call. Replayed calls (resume) are not
	// observed: the model is not called.
	Chat(ctx context.Context, req *model.Request) func(resp *model.Response, err error)
	// Tool starts with a tool call of a generator.
	Tool(ctx context.Context, c model.Caller, call model.ToolCall) (context.Context, func(result string, isError bool))
}
