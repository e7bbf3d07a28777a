// Package provider turns a model string — `openai/<model>`,
// `openai-responses/<model>`, `anthropic/<model>`, `gemini/<model>` or
// `scripted` — into a model.Model, reading the API key and base URL through
// the getenv it is given.
//
// The providers it knows are one table, the registry: each one's name, the
// variables it reads and how its model is built. A name the registry does
// not hold is refused, with the known names and a did-you-mean; no other
// provider is built in its place. Everything that can be wrong with a model
// string or the environment (an unknown provider, a malformed string, a
// missing API key) is reported by New and Check before any request, in one
// line that says what to fix. The scripted model is built by the engine, not
// here: New hands it back through Options.Scripted or reports ErrScripted.
package provider
