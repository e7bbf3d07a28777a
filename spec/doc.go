// Package spec owns fsd's manifests: the Go types of skills (YAML manifests
// and Agent Skills SKILL.md folders) and workflows, loading them by walking
// yaml.Node so every value keeps its file:line:col, discovering skills under
// folders, and the semantic checks that run after schema validation.
//
// It reports problems as diag.Diagnostics and never panics on bad input.
// It does not run anything (that is the engine's job), and it does not own
// the JSON Schemas (package schemas) or how diagnostics are printed (the CLI).
//
// # Passes
//
// Loading a file runs, in order: reading (size limit, UTF-8 check), YAML
// parsing (depth limit), the JSON Schema of its kind (types, required keys,
// enums, lengths), and a walk into the Go types that reports unknown keys
// with a "did you mean" hint, duplicate keys, and every rule one file can
// break alone: ids, semver, durations, tool run kinds, context-supply,
// item-visibility and flow values, agent tool references, instructions-file
// paths. Where the walk and the schema complain about the same place, the
// walk's more specific message is kept. Check then runs the rules that span
// files: unique skill ids, tool names unique across the enabled skills,
// `enabled` entries, task ids, assignees, deps, cycles and task caps.
//
// # Decisions
//
//   - A SKILL.md's name is the skill's id (NFKC-normalized; lowercase
//     letters of any script, digits and hyphens, as skills-ref reads it);
//     a name that does not match its folder is a warning. Its frontmatter's
//     unknown keys are warnings (errors with strict), so a SKILL.md written
//     for another product loads unchanged; Claude Code's extensions
//     (ClaudeCodeKeys) are known keys. A SKILL.md without `version` has
//     none: Revision tells its edits apart by content digest. allowed-tools
//     may be a space-separated string (patterns such as Bash(git diff:*)
//     stay whole) or a list. A SKILL.md body and instructions-file
//     together are an error. A description over MaxDescription characters
//     is a warning; the catalog shows it cut (CatalogDescription).
//   - What `fsd run` cannot load it leaves out (LoadProjectLenient): a
//     skill with errors, or one whose tools clash with an earlier skill's,
//     is Skipped unless the workflow needs it (enabled:, static task
//     assignee). A second skill with an id already found is skipped with a
//     warning naming both files, in run and validate alike.
//   - A *.skill.yaml requires id, name, description and version; unknown
//     keys are errors there and in workflows.
//   - instructions-file and resources stay inside the skill's folder:
//     absolute paths, ".." and symlinks that lead out are errors. Resources
//     are the files beside a SKILL.md or skill.yaml (hidden files left out),
//     relative and slash-separated; a *.skill.yaml in a shared folder has none.
//   - Discovery skips hidden folders (but .claude/skills and
//     .agents/skills), .git, node_modules, workflows and
//     *.script.yaml; a folder holding SKILL.md or skill.yaml is one skill
//     and is not searched further. It goes MaxDiscoveryDepth folders deep
//     and through MaxDiscoveryFolders folders at most, with a warning when
//     it stops. `skills:` entries expand a leading ~ and $HOME; without a
//     `skills:` key a workflow uses DefaultSkillSources: DefaultSkillDirs
//     in the nearest folder up to its repository root that has them, then
//     in the home folder.
//   - Loading keeps values as written, with one exception: an absent
//     item-visibility is sub (the zero Visibility is a real value). Every
//     other default is filled by one method where the value is used:
//     Limits.WithDefaults, Agent.WithDefaults (flow deps, recent's last 8,
//     turns 8 with context-supply conversation) and Flow.WithDefaults.
//   - Each key's default and the values it takes are stated once, in Facts,
//     from the constants the code uses; the schemas' default and enum
//     keywords, the decoder's key lists and the docs are checked against it
//     by tests, so a default changes in one place.
//   - YAML merge keys (<<) are not supported: they read as an unknown key.
//
// # Limits
//
// A manifest, SKILL.md or instructions file is at most MaxFileSize (4 MiB),
// a workflow file MaxWorkflowSize (16 MiB: its static tasks may be a
// fan-out of 100,000), and each must be UTF-8 without NUL bytes; YAML
// nests at most MaxDepth (100) levels; aliases may reach at most
// schemas.MaxAliasNodes (100,000) nodes and schemas.MaxAliasBytes (4 MiB)
// of text, so an alias bomb fails in microseconds and a large value
// aliased many times at its alias; a description over MaxDescription
// (1,024) characters is a warning and compatibility is at most
// MaxCompatibility (500). A tool's description is at most
// MaxToolDescription (16 KiB), and a tool's input
// schema and an agent's output schema at most MaxToolSchema (64 KiB) as
// JSON: they are sent with every model request. A SKILL.md folder lists
// at most MaxResources (1,000) resource files. Each limit is reported at a
// file:line:col like any other problem; a scripted model's script is
// loaded for a run only once ValidateScript passes it.
package spec
