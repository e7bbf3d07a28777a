// Package egress gives a sandboxed program the network it is allowed and
// nothing more: an HTTP forward proxy that fsd runs outside the sandbox,
// reachable only through a unix socket in a private folder, which tunnels
// (CONNECT) or forwards (absolute-URI requests) to the hosts of an
// allowlist and answers every other host with 403 and the setting that
// would allow it; and the small bridge the sandbox's launcher runs inside
// the program's network namespace, where only loopback exists, from a
// 127.0.0.1 port to that socket.
//
// The proxy resolves names itself (the sandbox has no DNS), dials the
// address it checked, and keeps a host reached by a wildcard rule off
// loopback, link-local and private addresses (see Allowlist).
//
// A program that ignores the proxy variables ProxyEnv sets reaches no
// network at all: the sandbox has no other way out. Package egress does
// not decide which hosts a program may reach (the workflow's and skill's
// `sandbox:` settings, read by package spec) nor start programs or
// namespaces (package sandbox).
package egress
