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
// A valid manifest is judged without the validator: a walk over the YAML
// tree checks it against rules decoded from the schemas' JSON, and only a
// document the walk does not accept, or a value under a schema with a
// keyword the walk does not check, goes to the validator, whose schemas
// are compiled then. Compiling costs more than a short command's own work
// (the library checks each schema against the 2020-12 meta-schema), so a
// run of valid manifests compiles none.
//
// The schemas are written by hand, for editors to read well; their
// `default` and `enum` keywords and their keys are checked against spec's
// table of facts and key lists by spec's tests (schemas cannot import
// spec, which imports it).
package schemas
