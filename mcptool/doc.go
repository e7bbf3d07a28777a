// Package mcptool turns the Model Context Protocol servers a skill declares
// (`mcp:` in its manifest) into tools the engine offers like any other: a
// Pool connects to a skill's servers when the skill loads — starting a
// stdio server's program, or opening a Streamable HTTP session — lists
// their tools once per load, and hands back Tools with the same Def and
// Call as command tools.
//
// Names cannot clash: a server's tool T is offered as
// mcp__SKILL__SERVER__T (skill ids are unique, server names are unique in
// a skill, and skill tools may not start with mcp__). Characters a model
// provider would refuse become _, and a name over 64 characters is cut and
// ends in 8 hex digits of the full name's SHA-256 (see ToolName).
//
// A call checks its arguments against the server's input schema before
// anything is sent, is bounded by the server's timeout and by the run's
// context (cancelling sends MCP's notifications/cancelled), and never
// fails with a Go error: text content becomes the result, isError results
// are tool errors, images, audio and embedded resources are kept as
// artifacts (Spooler; the engine keeps them as work of the run, readable
// whatever is loaded) and named by handle — images and audio also ride
// with the result as model.Media, and a resource link is read and kept —
// and a server that died gives an error result and is started again on
// the next call.
//
// What a server sends during a call reaches the run through the call's
// tool.Hooks: progress notifications (every call carries a progress
// token), questions for the person (elicitation, answered through the
// run's approvals) and requests for a completion (sampling, the run's
// model once approved). A server's root is the run's workspace. A tool
// that requires a task (MCP's task-based tools) is called as one by the
// connection under the SDK, which follows the task to its result (tasks.go).
//
// Servers of unloaded skills stay up for Options.Idle (DefaultIdle), so a
// skill read again soon reuses them, then close; Close ends them all at
// run end. A stdio server runs in its own process group, gets SIGKILL if
// fsd dies (Pdeathsig on Linux), sees only PATH, HOME and the variables
// its `env:` lists, and runs only for a trusted skill, exactly like a
// command tool (both are started by internal/proc).
//
// It does not decide when a skill loads or which tools a request carries
// (the engine), nor how results are journaled for resume.
package mcptool
