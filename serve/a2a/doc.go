// Package a2a serves a workflow as an A2A agent: its agent card at
// /.well-known/agent-card.json and the protocol's JSON-RPC methods
// message/send, message/stream (Server-Sent Events), tasks/get and
// tasks/cancel at /a2a, driving serve.Backend. A contextId is a session,
// a task is one turn of it, and an approval the turn waits for is the
// task's input-required state, answered by the client's next message on
// the same task.
//
// The wire is A2A protocol version 0.3.0 (a2a.json of
// github.com/a2aproject/A2A v0.3.0), the version @a2a-js/sdk 1.3.0's
// JSON-RPC client speaks to an agent whose card declares it.
package a2a
