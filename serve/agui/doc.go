// Package agui serves a workflow to AG-UI clients: POST /agui takes the
// protocol's RunAgentInput and answers with its event stream over
// Server-Sent Events, mapped from the engine's events as serve.Backend
// delivers them. An approval ends the AG-UI run with an interrupt
// outcome; the client's next run resumes it.
//
// The wire follows @ag-ui/core 1.0.0 (its zod schemas): field names,
// event types and the interrupt/resume shapes are that version's.
package agui
