package artifact

import (
	"encoding/json"
	"fmt"

	"github.com/fsdrun/fsd/model"
)

// Output bounds. Every reader's answer fits in MaxOutput bytes plus a
// one-line note; what does not fit is cut with a note naming the call
// that reads on.
const (
	MaxOutput     = 16 << 10 // bytes of one reader answer
	DefaultLines  = 40       // artifact_head / artifact_tail
	MaxLines      = 1000
	MaxPattern    = 1000 // bytes of an artifact_grep pattern
	MaxMatches    = 50   // matching lines artifact_grep shows
	MaxContext    = 10   // context lines either side of a match
	MaxLineShown  = 500  // bytes of one line in grep output
	DefaultDepth  = 3    // artifact_md_ast
	MaxDepth      = 8
	MaxListed     = 200 // links, images, headings listed at most
	maxArgsBytes  = 1 << 20
	handleArgDesc = "The artifact handle from read_skill's receipt or the skill's pointer (h_…)."
	pathArgDesc   = "Optional: a resource file of the skill, as a path relative to its folder (e.g. references/api.md). Omit to read the skill's instructions."
)

type param struct {
	name   string
	schema map[string]any
}

func intParam(name, desc string, lo, hi int) param {
	return param{name, map[string]any{"type": "integer", "description": desc, "minimum": lo, "maximum": hi}}
}

// reader is one tool of DESIGN §4.
type reader struct {
	name string
	desc string
	// short is what requests carry: every reader is in every request
	// while a handle skill is loaded, so its definition is kept to a few
	// tokens (issue 14: all readers together at most 600). desc stays
	// the full explanation, for the docs.
	short    string
	markdown bool // only for markdown artifacts: answered from the index
	params   []param
	required []string // besides handle
	run      func(d *doc, a *args) (string, error)
}

// readers is the fixed table of reader tools; it is never modified.
var readers = []reader{
	{name: "artifact_md_headings", short: "Headings with lines.", markdown: true, run: mdHeadings,
		desc: "List the headings of a markdown artifact with their levels and line numbers: the table of contents to pick sections from."},
	{name: "artifact_md_sections", short: "Section by heading (A > B).", markdown: true, run: mdSection,
		desc: "Read one section of a markdown artifact: the heading and everything up to the next heading of the same or a higher level. Name it by heading text (Install) or by path (Setup > Install).",
		params: []param{
			{"heading", map[string]any{"type": "string", "minLength": 1, "description": `Heading text, or a path of headings separated by ">" (e.g. "Setup > Install").`}},
			intParam("occurrence", "When several headings match, which one (1-based, in document order).", 1, 1<<20),
		},
		required: []string{"heading"}},
	{name: "artifact_md_frontmatter", short: "YAML front matter.", markdown: true, run: mdFrontMatter,
		desc: "Read the YAML front matter of a markdown artifact (the block between the leading --- lines)."},
	{name: "artifact_md_code_blocks", short: "Code blocks.", markdown: true, run: mdCodeBlocks,
		desc: "Read the code blocks of a markdown artifact (fenced and indented) with their languages and lines.",
		params: []param{
			{"language", map[string]any{"type": "string", "description": "Only blocks whose info string starts with this language (case-insensitive), e.g. bash."}},
			intParam("index", "Only this block (1-based, counted after the language filter).", 1, 1<<20),
		}},
	{name: "artifact_md_links", short: "Links.", markdown: true, run: mdLinks,
		desc: "List the links of a markdown artifact (inline, reference-style and autolinks) with their targets and lines."},
	{name: "artifact_md_images", short: "Images.", markdown: true, run: mdImages,
		desc: "List the images of a markdown artifact with alt text, source and line."},
	{name: "artifact_md_text", short: "Plain text, paged.", markdown: true, run: mdText,
		desc: fmt.Sprintf("Read a markdown artifact as plain text, markup removed. Answers at most %d bytes; pass offset to read on.", MaxOutput),
		params: []param{
			intParam("offset", "Byte offset into the plain text to start at (default 0).", 0, 1<<40),
			intParam("limit", fmt.Sprintf("Bytes to read (default and maximum %d).", MaxOutput), 1, MaxOutput),
		}},
	{name: "artifact_md_ast", short: "AST as JSON.", markdown: true, run: mdAST,
		desc: "Show the markdown syntax tree of an artifact as JSON (node kinds, levels, lines, short texts), cut at a depth.",
		params: []param{
			intParam("depth", fmt.Sprintf("Levels below the document to show (default %d, at most %d).", DefaultDepth, MaxDepth), 1, MaxDepth),
		}},
	{name: "artifact_head", short: "First lines.", run: head,
		desc:   "Read the first lines of an artifact.",
		params: []param{intParam("lines", fmt.Sprintf("How many lines (default %d, at most %d).", DefaultLines, MaxLines), 1, MaxLines)}},
	{name: "artifact_tail", short: "Last lines.", run: tail,
		desc:   "Read the last lines of an artifact.",
		params: []param{intParam("lines", fmt.Sprintf("How many lines (default %d, at most %d).", DefaultLines, MaxLines), 1, MaxLines)}},
	{name: "artifact_grep", short: "RE2 line search.", run: grep,
		desc: fmt.Sprintf("Search an artifact line by line with a regular expression (RE2 syntax). Shows at most %d matching lines, numbered, with optional context lines.", MaxMatches),
		params: []param{
			{"pattern", map[string]any{"type": "string", "minLength": 1, "maxLength": MaxPattern, "description": "RE2 regular expression, matched against each line."}},
			intParam("context", fmt.Sprintf("Lines of context before and after each match (default 0, at most %d).", MaxContext), 0, MaxContext),
			{"ignore_case", map[string]any{"type": "boolean", "description": "Match case-insensitively."}},
		},
		required: []string{"pattern"}},
	{name: "artifact_cat", short: "Bytes from offset, paged.", run: cat,
		desc: fmt.Sprintf("Read an artifact's bytes from an offset. Answers at most %d bytes; a note gives the offset to read on from.", MaxOutput),
		params: []param{
			intParam("offset", "Byte offset to start at (default 0).", 0, 1<<40),
			intParam("limit", fmt.Sprintf("Bytes to read (default and maximum %d).", MaxOutput), 1, MaxOutput),
		}},
	{name: "artifact_byte_length", short: "Bytes.", run: byteLength,
		desc: "The size of an artifact in bytes."},
	{name: "artifact_line_count", short: "Lines.", run: lineCountReader,
		desc: "The number of lines of an artifact."},
	{name: "artifact_estimate_tokens", short: "Tokens.", run: estimateTokens,
		desc: "The size of an artifact in tokens (o200k_base byte-pair encoding), to decide whether to read it whole."},
}

// Tools returns the definitions of the reader tools, in a fixed order, for
// a request that carries a handle-channel skill (H2). They are compact:
// a short description and parameter names and types only (the readers
// check values and answer errors the model reads); what handle and path
// mean is said once, in the context block.
func Tools() []model.ToolDef {
	defs := make([]model.ToolDef, 0, len(readers))
	for _, r := range readers {
		props := map[string]any{"handle": map[string]string{"type": "string"}, "path": map[string]string{"type": "string"}}
		for _, p := range r.params {
			props[p.name] = map[string]any{"type": p.schema["type"]}
		}
		schema := map[string]any{
			"type":       "object",
			"properties": props,
			"required":   append([]string{"handle"}, r.required...),
		}
		raw, err := json.Marshal(schema)
		if err != nil {
			// The schemas are literals of strings.
			panic(fmt.Sprintf("artifact: marshal schema of %s: %v", r.name, err))
		}
		defs = append(defs, model.ToolDef{Name: r.name, Description: r.short, Parameters: raw})
	}
	return defs
}

// Describe returns each reader's full description, by name, for docs.
func Describe() map[string]string {
	out := make(map[string]string, len(readers))
	for _, r := range readers {
		desc := r.desc
		if r.markdown {
			desc += " Markdown only: the skill's instructions or a .md resource."
		}
		out[r.name] = desc
	}
	return out
}

// IsReader reports whether name is one of the reader tools.
func IsReader(name string) bool {
	return findReader(name) != nil
}

func findReader(name string) *reader {
	for i := range readers {
		if readers[i].name == name {
			return &readers[i]
		}
	}
	return nil
}
