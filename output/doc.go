// Package output owns an agent's typed result: the JSON Schema an agent
// declares with `output:`, compiled once, and the check of a final answer
// against it.
//
// A final answer is typed when it is one JSON value valid against the
// schema. The answer may be the JSON alone or the JSON in a single fenced
// code block (models like to fence it); anything else — prose around it,
// two values, invalid JSON — is a violation the model is told about, so
// it can repair its answer.
//
// Schemas are self-contained: a $ref may point inside the schema, never to
// a file or URL (Compile refuses to load anything), so validating a
// manifest reads nothing and a run fetches nothing.
package output
