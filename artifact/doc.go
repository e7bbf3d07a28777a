// Package artifact keeps skill bodies and their resource files as
// artifacts a model reads in pieces, and implements the reader operations
// that page through them, on two surfaces over one implementation: the
// compact one, two tools with a selector argument get — artifact_md
// (markdown parts: headings, section, code, …) and artifact_read (any
// artifact: head, tail, cat, grep, size) — and the named one, a tool per
// operation (artifact_md_headings, artifact_cat, …), which costs more
// tokens per request and asks the model for no selector.
//
// A body is spooled once per (skill id, version) under an unguessable
// handle and parsed once, at spool time, with goldmark into an index:
// heading tree, sections with byte ranges, front matter, code blocks,
// links, images and plain text. Readers answer from that index and bound
// their output, so a model that asks for "everything" still gets a page
// and a note on how to read on. Resource files beside a SKILL.md are
// addressed by relative path under the skill's handle, read lazily and
// never from outside the skill folder.
//
// The package does not decide which skills are loaded, when a reader's
// result is reclaimed, or how the pointer is placed in a request: the
// engine owns those and tells Call which skills are loaded now.
package artifact
