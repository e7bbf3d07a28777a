// Package cassette saves model exchanges to a JSON-lines file, a cassette,
// and serves them back offline: `fsd run --record-cassette FILE` wraps the
// real model in a Recorder, `fsd run --replay FILE` uses a Replayer instead
// of any model, so a skill author can regression-test skills in CI without a
// network or a key.
//
// The word is the one HTTP test tools (VCR, go-vcr) use for the same thing,
// and it is not "record": a run record is the folder a run leaves under
// .fsd/runs (package runrecord), a different file for a different reader.
//
// A cassette is one JSON object a line: a header, then one exchange per
// model call — who called (agent and task), the call's place in that
// caller's sequence, a digest of the canonicalised request, a summary of the
// request (hashes, lengths, short previews) and the response. Secrets are
// stripped before anything is written: API keys never reach the provider
// layer's requests, and any value passed to WithSecrets (fsd passes the values of its
// *_KEY, *_TOKEN and *_SECRET variables) is masked wherever it appears in
// text.
//
// Replay is keyed by caller and sequence, never by arrival order, so
// concurrent board workers replay the same answers however their calls
// interleave. The first request whose digest differs from the cassette
// fails with an error saying which caller, which step and what differs.
//
// The package does not make handles or other random values reproducible:
// the engine must seed them (the cassette's header meta can carry a seed).
package cassette
