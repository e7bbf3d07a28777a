// Package gemini is the model.Model for Google's Gemini API
// (generativelanguage.googleapis.com, v1beta): models.generateContent for
// a whole answer and models.streamGenerateContent with alt=sse for a
// streamed one. It speaks the wire format itself (wire.go holds the
// request and answer shapes; add new request fields there), written from
// Google's API reference (ai.google.dev/api/generate-content, v1beta, and
// the thought-signatures guide, ai.google.dev/gemini-api/docs/thought-signatures,
// as consulted 2026-12-01) and checked against the types of Google's Go
// SDK (googleapis/go-genai, commit 6fd3e65 of 2026-08-21).
//
// It maps model.Request to a generateContent request — the current-context
// block as systemInstruction, transcript messages as user and model
// contents (consecutive turns of one role merged), assistant calls as
// functionCall parts with their ids and thought signatures, each result
// as a functionResponse part ({"output": …} or {"error": …}), images and
// audio as inlineData parts, tools as functionDeclarations with their
// JSON Schema (parametersJsonSchema), an output schema as
// responseJsonSchema fitted to the subset the API takes — and the first
// candidate back to model.Response, thought parts left out. A stream is
// complete only when a candidate carries a finish reason; otherwise it is
// retried, and a retry after streamed text calls Request.OnReset first.
//
// Caching is Gemini's implicit prefix caching, which needs nothing in the
// request (the usage reports the cached tokens). Explicit cachedContents
// are not used: they are resources on Google's side, billed per hour of
// storage, that a request must name instead of sending the prefix, while
// fsd keeps every request whole and stateless (the journal, not the
// server, is the truth of a run), and a generator's prefix changes as it
// loads skills.
//
// The call itself (credentials, retries under model/retry, streaming, the
// reset) is model/internal/wire's Client, shared with the other providers.
// It does not read the environment or parse model strings: model/provider
// does.
package gemini
