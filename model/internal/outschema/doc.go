// Package outschema fits an agent's output schema (any JSON Schema) to
// what a provider's structured output accepts.
//
// Structured output decodes under a grammar built from the schema, so the
// providers take a subset of JSON Schema and reject a request whose schema
// leaves it: the task would fail on a schema fsd itself validates fine.
// So a provider passes the schema on only where it fits (or, for
// Anthropic and Gemini, can be made to fit by dropping constraints the
// grammar cannot express); otherwise the request goes without it, and the model learns
// the schema from the prompt. fsd checks every final answer against the
// whole schema either way, so a dropped constraint is still enforced by a
// repair turn.
package outschema
