// Package providertest holds the tests every provider client must pass,
// written once: retries and their waits, error statuses, timeouts, cut
// streams and the reset before a retry's text, the answer cap and
// cancellation, every kind of request body, and the published reference's
// example responses parsed. A provider's own test file supplies its fixtures (a
// conversation, the whole and streamed answer to it, its error bodies)
// and the expectations that differ; what it checks beyond these (request
// mapping, caching, output schemas) stays in its own package.
//
// It is imported by tests only.
package providertest
