// Package serve is fsd's HTTP server over engine sessions: a REST API for
// apps (sessions, turns, approvals), each session's events as Server-Sent
// Events replayed from its run record, the OpenAPI document of both, and
// the mount points of the protocol adapters (AG-UI, A2A), all behind one
// guard (Host and Origin allowlist, bearer token off loopback, capped
// bodies).
//
// Backend is the seam between the server and the adapters: what a
// protocol drives, whatever its wire. The server implements it over
// engine sessions; servetest.Fake implements it in memory for tests.
//
// It is not a run queue or a scheduler: a session runs one turn at a
// time, in this process, and its record is the only state that outlives it.
package serve
