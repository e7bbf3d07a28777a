// Package wire is what the provider clients share: the Client that
// runs a call (credentials and base URL, the retry loop, streaming with
// a reset before a retried stream's text, the key masked in errors),
// posting a JSON request, turning an error status into a
// retry.StatusError, reading a body under a size cap, reading a
// server-sent event stream, and reading the plain JSON (an error or a
// whole answer) some servers send when asked to stream. A provider brings only what is its own: the
// Endpoint (paths, key header), the request body, and the Format that
// reads its answers, whole and streamed.
//
// fsd speaks the wire formats itself instead of linking the vendors'
// SDKs: it uses one endpoint of each, and the SDKs (hundreds of services
// each) tripled the binary and made a cold build take minutes and gigabytes
// of compiler memory (see docs/building.md).
package wire
