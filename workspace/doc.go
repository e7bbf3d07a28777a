// Package workspace owns a run's workspace: the folder the programs fsd
// starts for a skill work in, and the built-in action tools over it,
// named as Claude Code names them so that a skill's allowed-tools means
// the same thing here: Bash, Read, Write, Edit, Glob and Grep.
//
// Every path a tool takes is confined: relative paths are the
// workspace's, an absolute path must lie inside the workspace (or, for
// the tools that only read — Read, Glob, Grep — inside a folder the
// caller names read-only, such as a loaded skill's), and each file is
// opened through an os.Root, so neither ".." nor a symlink leads out.
// An escape is a tool error naming the workspace, never a Go error.
// Bash runs its command line through /bin/sh -c, started by package
// tool as a command tool is (internal/proc: own process group, minimal
// environment, timeout, output cap), in the workspace.
//
// It does not decide which tools a generator is offered, whether a call
// needs approval, or how a call is journaled: those are the engine's. It
// does not confine the programs Bash starts beyond their working folder:
// that is the sandbox's.
package workspace
