// Package redact is the one place that masks secrets: it says which values
// of fsd's own environment are secrets (FromEnv), keeps a run's growing set
// of them (Set: fsd's keys, the values a skill's tools and MCP servers take
// from the environment, transport credentials), and replaces each in text
// and errors with Mask before the text is journaled, sent to a provider,
// recorded, logged or rendered.
//
// A secret is masked in every form it may take in text: as it is, and as
// JSON, HTML and URL queries escape it, so a key holding & < > or " is
// masked in a JSON record or a page as well as in a program's raw output.
// Values shorter than MinLen are not masked (a one-character value would
// shred every text); names are never masked.
//
// It does not decide which of a skill's variables to pass to a program
// (internal/proc) or where text goes: its callers mask what they produce.
package redact
