// Package wire is what the two provider clients share on the HTTP level:
// posting a JSON request, turning an error status into a
// retry.StatusError, reading a body under a size cap, and reading a
// server-sent event stream.
//
// fsd speaks the two wire formats itself instead of linking the vendors'
// SDKs: it uses one endpoint of each, and the SDKs (hundreds of services
// each) tripled the binary and made a cold build take minutes and gigabytes
// of compiler memory (see README, "Building").
package wire
