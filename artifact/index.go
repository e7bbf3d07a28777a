package artifact

import (
	"bytes"
	"sort"
	"strings"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// mdIndex is everything the markdown readers need, computed in one pass
// over goldmark's tree at spool time.
type mdIndex struct {
	// frontMatter is the YAML between the leading --- lines, without them;
	// hasFront tells an empty block from none.
	frontMatter string
	hasFront    bool
	// base is where the markdown after the front matter starts in the
	// body: goldmark parses body[base:], and positions from its tree are
	// shifted by base so every reader speaks in body offsets.
	base     int
	src      []byte // body[base:], what goldmark saw
	root     ast.Node
	headings []heading
	codes    []codeBlock
	links    []link
	images   []image
}

type heading struct {
	level int
	text  string
	path  []string // texts of the enclosing headings, then this one
	line  int
	// start and end are the section's byte range in the body: from the
	// heading's line to the next heading of the same or a higher level.
	start, end int
}

type codeBlock struct {
	info     string // the fence's info string; "" for indented blocks
	language string // first word of info
	fenced   bool
	line     int // line of the opening fence or first indented line
	content  string
}

type link struct {
	text, url, title string
	line             int
	ref              string // reference label for [text][ref] links
	auto             bool   // <https://…> or a bare URL
}

type image struct {
	alt, url, title string
	line            int
}

// splitFrontMatter finds a YAML front matter block: the body's first line
// is "---" and a later line is "---" or "...". It returns the block's text
// and where the markdown starts; ok is false when there is none, in which
// case the whole body is markdown (an unclosed "---" is a thematic break).
func splitFrontMatter(body []byte) (fm string, rest int, ok bool) {
	first, next, found := cutLine(body, 0)
	if !found || strings.TrimRight(first, " \t") != "---" {
		return "", 0, false
	}
	start := next
	for pos := next; pos < len(body); {
		line, after, _ := cutLine(body, pos)
		if t := strings.TrimRight(line, " \t"); t == "---" || t == "..." {
			return string(body[start:pos]), after, true
		}
		pos = after
	}
	return "", 0, false
}

// cutLine returns the line starting at pos without its "\n" or "\r\n",
// the offset after it, and whether the line ended in a newline.
func cutLine(b []byte, pos int) (line string, next int, newline bool) {
	i := bytes.IndexByte(b[pos:], '\n')
	if i < 0 {
		return strings.TrimSuffix(string(b[pos:]), "\r"), len(b), false
	}
	return strings.TrimSuffix(string(b[pos:pos+i]), "\r"), pos + i + 1, true
}

// buildIndex parses body once and records what the readers serve.
func buildIndex(p parser.Parser, body []byte, lines []int) *mdIndex {
	ix := &mdIndex{}
	if fm, rest, ok := splitFrontMatter(body); ok {
		ix.frontMatter, ix.base, ix.hasFront = fm, rest, true
	}
	ix.src = body[ix.base:]
	ix.root = p.Parse(text.NewReader(ix.src))
	lineOf := func(pos int) int {
		if pos < 0 {
			return 0
		}
		return lineAt(lines, ix.base+pos)
	}
	var stack []string // enclosing heading texts by level-1
	_ = ast.Walk(ix.root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			t := inlineText(n, ix.src, " ")
			if len(stack) >= n.Level {
				stack = stack[:n.Level-1]
			}
			for len(stack) < n.Level-1 {
				stack = append(stack, "") // a skipped level has no text
			}
			stack = append(stack, t)
			path := make([]string, 0, len(stack))
			for _, s := range stack {
				if s != "" {
					path = append(path, s)
				}
			}
			ln := lineOf(n.Pos())
			ix.headings = append(ix.headings, heading{
				level: n.Level, text: t, path: path, line: ln,
				start: lines[max(ln-1, 0)],
			})
			return ast.WalkSkipChildren, nil
		case *ast.FencedCodeBlock:
			cb := codeBlock{fenced: true, line: lineOf(n.Pos()), content: segmentsText(n.Lines(), ix.src)}
			if n.Info != nil {
				cb.info = strings.TrimSpace(string(n.Info.Segment.Value(ix.src)))
				cb.language, _, _ = strings.Cut(cb.info, " ")
			}
			ix.codes = append(ix.codes, cb)
			return ast.WalkSkipChildren, nil
		case *ast.CodeBlock:
			ix.codes = append(ix.codes, codeBlock{line: lineOf(n.Pos()), content: segmentsText(n.Lines(), ix.src)})
			return ast.WalkSkipChildren, nil
		case *ast.Link:
			l := link{text: inlineText(n, ix.src, " "), url: string(n.Destination), title: string(n.Title), line: lineOf(n.Pos())}
			if n.Reference != nil {
				l.ref = string(n.Reference.Value)
				if l.ref == "" { // [text][] names the reference by its text
					l.ref = l.text
				}
			}
			ix.links = append(ix.links, l)
		case *ast.AutoLink:
			u := string(n.URL(ix.src))
			ix.links = append(ix.links, link{text: u, url: u, line: lineOf(n.Pos()), auto: true})
		case *ast.Image:
			ix.images = append(ix.images, image{alt: inlineText(n, ix.src, " "), url: string(n.Destination), title: string(n.Title), line: lineOf(n.Pos())})
		}
		return ast.WalkContinue, nil
	})
	// A section runs to the next heading of the same or a higher level.
	for i := range ix.headings {
		h := &ix.headings[i]
		h.end = len(body)
		for _, next := range ix.headings[i+1:] {
			if next.level <= h.level {
				h.end = next.start
				break
			}
		}
	}
	return ix
}

// lineAt returns the 1-based line holding byte offset pos.
func lineAt(lines []int, pos int) int {
	return sort.SearchInts(lines, pos+1)
}

// lineStarts returns the offset of every line's first byte. A final
// newline ends the last line; it does not start an empty one.
func lineStarts(b []byte) []int {
	if len(b) == 0 {
		return []int{0}
	}
	starts := make([]int, 1, bytes.Count(b, []byte{'\n'})+1)
	for i, c := range b {
		if c == '\n' && i+1 < len(b) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

func segmentsText(segs *text.Segments, src []byte) string {
	var sb strings.Builder
	for i := range segs.Len() {
		s := segs.At(i)
		sb.Write(s.Value(src))
	}
	return strings.ReplaceAll(sb.String(), "\r\n", "\n")
}

// inlineText is the plain text of n's inline content: markup dropped,
// code spans and link texts kept, soft line breaks written as brk.
func inlineText(n ast.Node, src []byte, brk string) string {
	var sb strings.Builder
	writeInline(&sb, n, src, brk)
	return strings.TrimSpace(sb.String())
}

func writeInline(sb *strings.Builder, n ast.Node, src []byte, brk string) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			sb.Write(bytes.TrimSuffix(c.Segment.Value(src), []byte{'\r'}))
			if c.SoftLineBreak() || c.HardLineBreak() {
				sb.WriteString(brk)
			}
		case *ast.String:
			sb.Write(c.Value)
		case *ast.AutoLink:
			sb.Write(c.URL(src))
		case *ast.RawHTML:
			// Inline tags are markup, not text.
		default:
			writeInline(sb, c, src, brk)
		}
	}
}

// plainText renders the document without markup: headings, paragraphs,
// list items, table rows (cells joined by " | ") and code, one block per
// paragraph. HTML blocks are dropped: they are markup.
func (ix *mdIndex) plainText() string {
	var sb strings.Builder
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c.Kind() {
			case ast.KindHTMLBlock, ast.KindThematicBreak:
				continue
			case ast.KindFencedCodeBlock, ast.KindCodeBlock:
				sb.WriteString(segmentsText(c.Lines(), ix.src))
				sb.WriteString("\n")
				continue
			case east.KindTableHeader, east.KindTableRow:
				for cell := c.FirstChild(); cell != nil; cell = cell.NextSibling() {
					if cell != c.FirstChild() {
						sb.WriteString(" | ")
					}
					// A cell's escaped pipe stays escaped ("\|"): bare, it
					// would read as the cell separator.
					sb.WriteString(inlineText(cell, ix.src, " "))
				}
				sb.WriteString("\n")
				continue
			}
			if c.Type() == ast.TypeBlock && c.HasChildren() && c.FirstChild().Type() == ast.TypeInline {
				sb.WriteString(inlineText(c, ix.src, "\n"))
				sb.WriteString("\n\n")
				continue
			}
			walk(c)
			if c.Kind() == east.KindTable {
				sb.WriteString("\n")
			}
		}
	}
	walk(ix.root)
	if t := strings.TrimRight(sb.String(), "\n"); t != "" {
		return t + "\n"
	}
	return ""
}
