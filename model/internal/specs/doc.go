// Package specs holds JSON Schemas of the providers' request bodies, written
// here from each provider's published API reference, and Validate, which
// tests use to check that every body a client can produce is one the
// provider documents.
//
// Each schema is a file under schemas/ whose $comment cites the reference
// and the version it was written from. A schema cut from an OpenAPI
// document is made by extract.py (the command is in the file's $comment
// and in the script), so a newer document is one command away; a schema
// written by hand from a reference page says so. Objects are closed
// (unevaluatedProperties: false) where the reference lists every key, so a
// key a client misspells or invents fails instead of passing as an
// extension.
//
// It is for tests only: nothing at run time validates a request, and the
// schemas say what the providers accept, not what fsd sends (that is each
// client's wire.go).
package specs
