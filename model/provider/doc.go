// Package provider turns a model string — `openai/<model>`,
// `anthropic/<model>` or `scripted` — into a model.Model, reading the API key
// and base URL through the getenv it is given.
//
// Everything that can be wrong with a model string or the environment (an
// unknown provider, a malformed string, a missing API key) is reported by
// New and Check before any request, in one line that says what to fix. The
// scripted model is built by the engine, not here: New hands it back through
// Options.Scripted or reports ErrScripted.
package provider
