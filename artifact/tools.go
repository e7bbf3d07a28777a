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

// op is one reader operation, offered on two surfaces: on the compact
// one (Tools) as a get value of tool, so the operations cost the model two
// tool definitions; on the named one (NamedTools) as a tool of its own,
// named. An operation without tool is named only (its answer is part of
// a compact get's), one without named compact only (its parts are named).
type op struct {
	tool   string
	get    string
	named  string
	desc   string // the full explanation, for docs (Describe)
	params []param
	// required, besides handle and get.
	required []string
	run      func(d *doc, a *args) (string, error)
}

// ops is the fixed table of reader operations, in the order the tools
// list them; it is set once, by init (the operations' notes name other
// operations' calls through it), and never modified.
var ops []op

func init() { ops = opTable() }

func opTable() []op {
	return []op{
		{tool: ToolMD, get: "headings", named: "artifact_md_headings", run: mdHeadings,
			desc: "The headings with their levels and line numbers: the table of contents to pick sections from."},
		{tool: ToolMD, get: "section", named: "artifact_md_sections", run: mdSection,
			desc:     `One section: the heading and everything up to the next heading of the same or a higher level. heading names it by text (Install) or by path (Setup > Install); occurrence picks one when several match (1-based).`,
			params:   []param{{"heading", "string"}, {"occurrence", "integer"}},
			required: []string{"heading"}},
		{tool: ToolMD, get: "frontmatter", named: "artifact_md_frontmatter", run: mdFrontMatter,
			desc: "The YAML front matter (the block between the leading --- lines)."},
		{tool: ToolMD, get: "code", named: "artifact_md_code_blocks", run: mdCodeBlocks,
			desc:   "The code blocks (fenced and indented) with their languages and lines; language keeps blocks whose info string starts with it (case-insensitive), index keeps one (1-based, after the language filter).",
			params: []param{{"language", "string"}, {"index", "integer"}}},
		{tool: ToolMD, get: "links", named: "artifact_md_links", run: mdLinks,
			desc: "The links (inline, reference-style and autolinks) with their targets and lines."},
		{tool: ToolMD, get: "images", named: "artifact_md_images", run: mdImages,
			desc: "The images with alt text, source and line."},
		{tool: ToolMD, get: "text", named: "artifact_md_text", run: mdText,
			desc:   fmt.Sprintf("The plain text, markup removed, from byte offset (default 0), at most limit bytes (default and maximum %d).", MaxOutput),
			params: []param{{"offset", "integer"}, {"limit", "integer"}}},
		{tool: ToolMD, get: "ast", named: "artifact_md_ast", run: mdAST,
			desc:   fmt.Sprintf("The syntax tree as JSON (node kinds, levels, lines, short texts), depth levels below the document (default %d, at most %d).", DefaultDepth, MaxDepth),
			params: []param{{"depth", "integer"}}},
		{tool: ToolRead, get: "head", named: "artifact_head", run: head,
			desc:   fmt.Sprintf("The first lines (default %d, at most %d).", DefaultLines, MaxLines),
			params: []param{{"lines", "integer"}}},
		{tool: ToolRead, get: "tail", named: "artifact_tail", run: tail,
			desc:   fmt.Sprintf("The last lines (default %d, at most %d).", DefaultLines, MaxLines),
			params: []param{{"lines", "integer"}}},
		{tool: ToolRead, get: "cat", named: "artifact_cat", run: cat,
			desc:   fmt.Sprintf("The bytes from offset (default 0), at most limit (default and maximum %d); a note gives the offset to read on from.", MaxOutput),
			params: []param{{"offset", "integer"}, {"limit", "integer"}}},
		{tool: ToolRead, get: "grep", named: "artifact_grep", run: grep,
			desc:     fmt.Sprintf("The lines matching pattern (RE2), numbered, at most %d, with context lines either side (default 0, at most %d); ignore_case matches case-insensitively.", MaxMatches, MaxContext),
			params:   []param{{"pattern", "string"}, {"context", "integer"}, {"ignore_case", "boolean"}},
			required: []string{"pattern"}},
		{tool: ToolRead, get: "size", run: size,
			desc: "The size in bytes, lines and tokens (o200k_base byte-pair encoding), to decide whether to read it whole."},
		{named: "artifact_byte_length", run: byteLength,
			desc: "The size in bytes, to decide whether to read it whole."},
		{named: "artifact_line_count", run: lineTotal,
			desc: "The number of lines."},
		{named: "artifact_estimate_tokens", run: estimateTokens,
			desc: "The size in tokens (o200k_base byte-pair encoding), to decide whether to read it whole."},
	}
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

// Tools returns the definitions of the compact surface's reader tools,
// in a fixed order, for a request that carries a handle-channel skill or
// a kept result (H2): a one-line description and each parameter's name
// and type; the readers check values and answer errors the model reads.
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
		defs = append(defs, toolDef(tool, toolDescs[tool], props, []string{"handle", "get"}))
	}
	return defs
}

// NamedTools returns the definitions of the named surface: one tool per
// operation, described in full (Describe's words), in a fixed order. It
// costs more tokens per request than Tools and asks the model no get.
//
// H6: the same operations as Tools, answered by the same code.
func NamedTools() []model.ToolDef {
	var defs []model.ToolDef
	for _, o := range ops {
		if o.named == "" {
			continue
		}
		props := map[string]any{"handle": typ("string"), "path": typ("string")}
		for _, p := range o.params {
			props[p.name] = typ(p.typ)
		}
		defs = append(defs, toolDef(o.named, o.description(), props, append([]string{"handle"}, o.required...)))
	}
	return defs
}

func toolDef(name, desc string, props map[string]any, required []string) model.ToolDef {
	raw, err := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required})
	if err != nil {
		// The schemas are literals of strings.
		panic(fmt.Sprintf("artifact: marshal schema of %s: %v", name, err))
	}
	return model.ToolDef{Name: name, Description: desc, Parameters: raw}
}

func typ(t string) map[string]string { return map[string]string{"type": t} }

// description is an operation's full explanation.
func (o *op) description() string {
	if o.tool == ToolMD {
		return o.desc + " Markdown only: the skill's instructions or a .md resource."
	}
	return o.desc
}

// Describe returns the full description of each reader operation, keyed
// "tool get" (artifact_md section) on the compact surface and by its name
// on the named one, for docs.
func Describe() map[string]string {
	out := make(map[string]string, len(ops))
	for i := range ops {
		o := &ops[i]
		if o.tool != "" {
			out[o.tool+" "+o.get] = o.description()
		}
		if o.named != "" {
			out[o.named] = o.description()
		}
	}
	return out
}

// IsReader reports whether name is one of the reader tools, of either
// surface.
func IsReader(name string) bool {
	return name == ToolMD || name == ToolRead || findNamed(name) != nil
}

// findNamed returns the operation the named surface calls name, or nil.
func findNamed(name string) *op {
	for i := range ops {
		if ops[i].named != "" && ops[i].named == name {
			return &ops[i]
		}
	}
	return nil
}

// label names an operation in errors: "artifact_md section", or its
// named tool on the named surface.
func (o *op) label(named bool) string {
	if named || o.tool == "" {
		return o.named
	}
	return o.tool + " " + o.get
}

// call names the call of operation get in an answer's note: "artifact_read
// get=cat" on the compact surface, "artifact_cat" on the named one.
func (a *args) call(get string) string {
	for i := range ops {
		o := &ops[i]
		if o.get != get {
			continue
		}
		if a.named {
			return o.named
		}
		return o.tool + " get=" + o.get
	}
	return get
}

// findOp returns tool's operation get, or nil.
func findOp(tool, get string) *op {
	for i := range ops {
		if ops[i].tool == tool && ops[i].get != "" && ops[i].get == get {
			return &ops[i]
		}
	}
	return nil
}

// gets lists tool's operations, for errors.
func gets(tool string) string {
	var g []string
	for _, o := range ops {
		if o.tool == tool && o.get != "" {
			g = append(g, o.get)
		}
	}
	return strings.Join(g, ", ")
}
