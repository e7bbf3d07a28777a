// Package mcpserve serves an fsd workflow as a Model Context Protocol
// server (`fsd mcp serve`): one tool that takes the workflow's input and
// answers with the run's final answer, so any MCP client — Claude Code,
// an IDE, another agent — can call fsd workflows.
//
// Each call is one normal run (the caller's Runner builds it, with its
// own run record); the board's progress — tasks finished out of tasks
// known — goes to the client as MCP progress notifications when the call
// carries a progress token. Cancelling the call cancels the run. A call of
// the run waiting for approval is put to the client as an elicitation
// (else a progress message names fsd approve); the tool's annotations and
// outputSchema, and the structured result, say what the workflow does and
// answers.
//
// It does not load workflows or build runs (cmd/fsd and engine), and it
// does not choose a transport: callers run the server on stdio or mount
// it with mcp.NewStreamableHTTPHandler.
package mcpserve
