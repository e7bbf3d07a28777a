// Package spec owns fsd's manifests: the Go types of skills (YAML manifests
// and Agent Skills SKILL.md folders) and workflows, loading them by walking
// yaml.Node so every value keeps its file:line:col, discovering skills under
// folders, and the semantic checks that run after schema validation (ids,
// versions, references, dependency cycles).
//
// It reports problems as diag.Diagnostics and never panics on bad input.
// It does not run anything: that is the engine's job.
package spec
