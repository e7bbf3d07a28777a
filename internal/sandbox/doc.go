// Package sandbox confines the programs fsd starts for skills — command
// tools, skill scripts, the Bash tool, stdio MCP servers — to what a
// Policy allows: writes only in the run's workspace and a private tmp,
// reads of the system folders and of what the policy names (never home
// secrets such as ~/.ssh), network off unless allowed (all of it, or
// named hosts through an allowlisting proxy), a bound on processes, and
// every process of a call dead when the call ends or fsd dies.
//
// On Linux the native path needs no installed program: fsd re-executes
// itself as a small launcher (an init hook in this package) in fresh
// user, PID, mount, IPC and (network off or hosts) network namespaces;
// the launcher mounts a private /proc and /tmp, hides /run and secrets,
// bounds the call's processes (a pids cgroup, else RLIMIT_NPROC),
// confines one thread with Landlock and starts the program from it as its
// child. Where that cannot be had and bwrap is installed, bwrap does the
// same. Where neither can be had, Wrap fails closed with
// an error naming both fixes; the caller decides (a workflow's
// `sandbox: off` is the only way to run unconfined).
//
// It does not decide which policy applies to a call (the strictest of
// workflow, skill and tool settings: package spec and the engine) nor
// start or wait for the program (package proc).
package sandbox
