// Package proc is the one place fsd starts a program on a skill's behalf:
// a command tool, a skill's script, a stdio MCP server. Every such program
//
//   - sees only PATH, HOME, the names its manifest declares and the
//     variables fsd sets for it (Environ), so API keys in fsd's own
//     environment stay out of programs that did not ask for them;
//   - runs in its own process group, killed whole when its call is
//     cancelled or times out and when it is done (KillGroup), so what it
//     started in the background does not outlive it;
//   - on Linux gets SIGKILL when fsd dies, however fsd dies (Pdeathsig);
//   - has the end of its stderr kept (Tail) for the error a user reads;
//   - runs confined by the sandbox policy its caller gives (package
//     sandbox), or not at all when no sandbox can be had: only a nil
//     policy — a workflow's `sandbox: off` — starts it unconfined.
//
// It knows how a skill's script starts (ScriptArgv): itself when it is
// an executable native program or has a #! line, else through the
// interpreter its #! line or extension names.
//
// It also answers "is this process alive" (Alive) for the run records,
// whose run.json names the pid of the fsd writing them.
//
// It does not decide whether a skill may run programs (trust), which
// sandbox applies (spec.SandboxFor), which program a manifest names, or
// what a program's output means: those belong to its callers (tool,
// mcptool, the engine).
package proc
