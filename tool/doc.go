// Package tool runs the tools a skill declares: it
// compiles each tool once — the input JSON Schema and the command or reply
// templates — and answers each call with a Result the model reads.
//
// A call never fails with a Go error: bad arguments, a schema violation, a
// missing binary, a non-zero exit, a timeout or a flood of output all come
// back as a Result marked IsError or Truncated, stated in words the model
// can act on. Command tools run argv directly (no shell), in the run's
// workspace (WithWorkspace) with the skill's folder as SKILL_DIR and the
// base of a relative program, with a minimal environment, a timeout that kills the whole
// process group, stdout capped at 1 MiB and the tail of stderr kept
// (started by internal/proc, as scripts and MCP servers are). A
// command tool compiled WithTrust(false) never starts a process: every
// call answers a refusal naming the skill (WithSkill) and the folder to
// pass to --trust. Which skills are trusted is package trust's decision.
//
// It does not decide which tools are offered or whether a call names one
// (Unknown tool, L3: the engine), nor where state and store values live:
// the caller passes a KV, so per-load state and run-wide store (L4) are
// the engine's to scope.
package tool
