// Package servetest is an in-memory serve.Backend for the tests of the
// protocol adapters: scripted turns that emit events and ask for
// approvals, without an engine, a model or a run record.
package servetest
