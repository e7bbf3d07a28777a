// Package schemas owns fsd's published JSON Schemas (draft 2020-12) for
// skill manifests, SKILL.md frontmatter and workflows, embedded in the
// binary, and validation of a parsed YAML document against them, with each
// error mapped back to the YAML line and column it is about.
//
// The schemas are what editors use (through a `# yaml-language-server:
// $schema=…` comment) and what `fsd validate` checks first. They do not
// know about other files: references between skills, workflows and tasks,
// and rules a schema cannot say well (ids, did-you-mean for unknown keys),
// are the spec package's semantic checks. Validate therefore drops
// "additional properties" errors: spec reports unknown keys itself, with a
// suggestion.
//
// The schemas are written by hand, for editors to read well; their
// `default` and `enum` keywords and their keys are checked against spec's
// table of facts and key lists by spec's tests (schemas cannot import
// spec, which imports it).
package schemas
