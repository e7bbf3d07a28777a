package artifact

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/fsdrun/fsd/model"
)

// Output bounds. Every reader's answer fits in MaxOutput bytes plus a
// one-line note; what does not fit is cut with a note naming the call
// that reads on.
const (
	MaxOutput    = 16 << 10 // bytes of one reader answer
	DefaultLines = 40       // get=head / get=tail
	MaxLines     = 1000
	MaxPattern   = 1000 // bytes of a get=grep pattern
	MaxMatches   = 50   // matching lines get=grep shows
	MaxContext   = 10   // context lines either side of a match
	MaxLineShown = 500  // bytes of one line in grep output
	DefaultDepth = 3    // get=ast
	MaxDepth     = 8
	MaxListed    = 200 // links, images, headings listed at most
	maxArgsBytes = 1 << 20
)

// The reader tools (docs/design.md, Channels), as the model sees them: two tools, each
// with a selector argument, get, naming what to read. ToolMD answers
// from the markdown index (skill instructions, .md resources); ToolRead
// reads any artifact as lines and bytes.
const (
	ToolMD   = "artifact_md"
	ToolRead = "artifact_read"
)

type param struct {
	name string
	typ  string // JSON type: string, integer, boolean
}

// op is one thing a reader tool can get (a get value of its tool), so
// fifteen operations cost the model two tool definitions, not fifteen.
type op struct {
	tool   string
	get    string
	desc   string // the full explanation, for docs (Describe)
	params []param
	// required, besides handle and get.
	required []string
	run      func(d *doc, a *args) (string, error)
}

// ops is the fixed table of reader operations, in the order the tools
// list them; it is never modified.
var ops = []op{
	{tool: ToolMD, get: "headings", run: mdHeadings,
		desc: "The headings with their levels and line numbers: the table of contents to pick sections from."},
	{tool: ToolMD, get: "section", run: mdSection,
		desc:     `One section: the heading and everything up to the next heading of the same or a higher level. heading names it by text (Install) or by path (Setup > Install); occurrence picks one when several match (1-based).`,
		params:   []param{{"heading", "string"}, {"occurrence", "integer"}},
		required: []string{"heading"}},
	{tool: ToolMD, get: "frontmatter", run: mdFrontMatter,
		desc: "The YAML front matter (the block between the leading --- lines)."},
	{tool: ToolMD, get: "code", run: mdCodeBlocks,
		desc:   "The code blocks (fenced and indented) with their languages and lines; language keeps blocks whose info string starts with it (case-insensitive), index keeps one (1-based, after the language filter).",
		params: []param{{"language", "string"}, {"index", "integer"}}},
	{tool: ToolMD, get: "links", run: mdLinks,
		desc: "The links (inline, reference-style and autolinks) with their targets and lines."},
	{tool: ToolMD, get: "images", run: mdImages,
		desc: "The images with alt text, source and line."},
	{tool: ToolMD, get: "text", run: mdText,
		desc:   fmt.Sprintf("The plain text, markup removed, from byte offset (default 0), at most limit bytes (default and maximum %d).", MaxOutput),
		params: []param{{"offset", "integer"}, {"limit", "integer"}}},
	{tool: ToolMD, get: "ast", run: mdAST,
		desc:   fmt.Sprintf("The syntax tree as JSON (node kinds, levels, lines, short texts), depth levels below the document (default %d, at most %d).", DefaultDepth, MaxDepth),
		params: []param{{"depth", "integer"}}},
	{tool: ToolRead, get: "head", run: head,
		desc:   fmt.Sprintf("The first lines (default %d, at most %d).", DefaultLines, MaxLines),
		params: []param{{"lines", "integer"}}},
	{tool: ToolRead, get: "tail", run: tail,
		desc:   fmt.Sprintf("The last lines (default %d, at most %d).", DefaultLines, MaxLines),
		params: []param{{"lines", "integer"}}},
	{tool: ToolRead, get: "cat", run: cat,
		desc:   fmt.Sprintf("The bytes from offset (default 0), at most limit (default and maximum %d); a note gives the offset to read on from.", MaxOutput),
		params: []param{{"offset", "integer"}, {"limit", "integer"}}},
	{tool: ToolRead, get: "grep", run: grep,
		desc:     fmt.Sprintf("The lines matching pattern (RE2), numbered, at most %d, with context lines either side (default 0, at most %d); ignore_case matches case-insensitively.", MaxMatches, MaxContext),
		params:   []param{{"pattern", "string"}, {"context", "integer"}, {"ignore_case", "boolean"}},
		required: []string{"pattern"}},
	{tool: ToolRead, get: "size", run: size,
		desc: "The size in bytes, lines and tokens (o200k_base byte-pair encoding), to decide whether to read it whole."},
}

// toolDescs are the tools' descriptions as requests carry them: every
// reader tool is in every request while a handle skill is loaded, so they
// are kept to a line that maps each get to its arguments (all
// reader definitions together at most 600 tokens). What handle and path
// mean is said once, in the context block.
var toolDescs = map[string]string{
	ToolMD:   `Markdown artifact, by get: headings; section (heading "A > B", occurrence); frontmatter; code (language, index); links; images; text (offset, limit); ast (depth).`,
	ToolRead: "Any artifact, by get: head, tail (lines); cat (offset, limit in bytes); grep (pattern RE2, context, ignore_case); size.",
}

// Tools returns the definitions of the reader tools, in a fixed order, for
// a request that carries a handle-channel skill or a kept result (H2):
// a one-line description and each parameter's name and type; the readers
// check values and answer errors the model reads.
func Tools() []model.ToolDef {
	var defs []model.ToolDef
	for _, tool := range []string{ToolMD, ToolRead} {
		props := map[string]any{"handle": typ("string"), "path": typ("string")}
		var gets []string
		for _, o := range ops {
			if o.tool != tool {
				continue
			}
			gets = append(gets, o.get)
			for _, p := range o.params {
				props[p.name] = typ(p.typ)
			}
		}
		props["get"] = map[string]any{"enum": gets}
		raw, err := json.Marshal(map[string]any{
			"type":       "object",
			"properties": props,
			"required":   []string{"handle", "get"},
		})
		if err != nil {
			// The schemas are literals of strings.
			panic(fmt.Sprintf("artifact: marshal schema of %s: %v", tool, err))
		}
		defs = append(defs, model.ToolDef{Name: tool, Description: toolDescs[tool], Parameters: raw})
	}
	return defs
}

func typ(t string) map[string]string { return map[string]string{"type": t} }

// Describe returns the full description of each reader operation, keyed
// "tool get" (artifact_md section), for docs.
func Describe() map[string]string {
	out := make(map[string]string, len(ops))
	for _, o := range ops {
		desc := o.desc
		if o.tool == ToolMD {
			desc += " Markdown only: the skill's instructions or a .md resource."
		}
		out[o.tool+" "+o.get] = desc
	}
	return out
}

// IsReader reports whether name is one of the reader tools.
func IsReader(name string) bool {
	return name == ToolMD || name == ToolRead
}

// findOp returns tool's operation get, or nil.
func findOp(tool, get string) *op {
	for i := range ops {
		if ops[i].tool == tool && ops[i].get == get {
			return &ops[i]
		}
	}
	return nil
}

// gets lists tool's operations, for errors.
func gets(tool string) string {
	var g []string
	for _, o := range ops {
		if o.tool == tool {
			g = append(g, o.get)
		}
	}
	return strings.Join(g, ", ")
}
