package artifact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/yuin/goldmark/ast"
)

// The markdown readers answer from the index built at spool time.

func mdHeadings(d *doc, a *args) (string, error) {
	if len(d.md.headings) == 0 {
		return "no headings", nil
	}
	return headingList(d.md.headings, a), nil
}

// headingList renders headings as "line: ## text", bounded.
func headingList(hs []heading, a *args) string {
	var sb strings.Builder
	sb.Grow(min(len(hs), MaxListed) * 32)
	for i, h := range hs {
		t := clip(h.text, MaxLineShown)
		if i == MaxListed || sb.Len()+len(t)+16 > MaxOutput-100 {
			fmt.Fprintf(&sb, "[%d of %d headings shown; use %s to find the rest]\n", i, len(hs), a.call("grep"))
			break
		}
		// Written piecewise: this list is the readers' hottest answer.
		sb.WriteString(strconv.Itoa(h.line))
		sb.WriteString(": ")
		sb.WriteString("######"[:h.level])
		sb.WriteByte(' ')
		sb.WriteString(t)
		sb.WriteByte('\n')
	}
	return sb.String()
}

func mdSection(d *doc, a *args) (string, error) {
	query := strings.TrimSpace(*a.Heading)
	want := splitPath(query)
	if len(want) == 0 {
		return "", fmt.Errorf("heading is empty; name a heading or a path like \"Setup > Install\"")
	}
	// The whole query as one heading's text first: a heading may itself
	// contain ">". Then as a path; exact case before any case.
	var cands []heading
	var lit []string
	if t := strings.TrimSpace(strings.TrimLeft(query, "#")); t != "" {
		lit = []string{t}
	}
	for _, q := range [][]string{lit, want} {
		for _, fold := range []bool{false, true} {
			if len(cands) == 0 && len(q) > 0 {
				cands = matchHeadings(d.md.headings, q, fold)
			}
		}
	}
	if len(cands) == 0 {
		if len(d.md.headings) == 0 {
			return "", fmt.Errorf("no heading %q: %s has no headings", clip(query, 200), d.name)
		}
		return "", fmt.Errorf("no heading %q. The headings are:\n%s", clip(query, 200), strings.TrimSuffix(headingList(d.md.headings, a), "\n"))
	}
	var h heading
	switch {
	case a.Occurrence > 0:
		if a.Occurrence > len(cands) {
			return "", fmt.Errorf("occurrence %d of %q asked for, but %d headings match:\n%s", a.Occurrence, clip(query, 200), len(cands), strings.TrimSuffix(candidateList(cands), "\n"))
		}
		h = cands[a.Occurrence-1]
	case len(cands) > 1:
		return "", fmt.Errorf("heading %q is ambiguous; %d headings match:\n%sName one by its path (e.g. %q) or pass occurrence (1-%d)",
			clip(query, 200), len(cands), candidateList(cands), strings.Join(cands[1].path, " > "), len(cands))
	default:
		h = cands[0]
	}
	body := strings.ReplaceAll(string(d.src[h.start:h.end]), "\r\n", "\n")
	var sb strings.Builder
	fmt.Fprintf(&sb, "[section %q, lines %d-%d]\n", strings.Join(h.path, " > "), h.line, max(lineAt(d.lines, h.end-1), h.line))
	if len(body) > MaxOutput {
		cut := strings.LastIndexByte(validPrefix(body, MaxOutput), '\n') + 1
		if cut == 0 {
			cut = len(validPrefix(body, MaxOutput))
		}
		// body has lost its "\r"s; find the cut's offset in the source.
		off := h.start + cut + strings.Count(body[:cut], "\n")*crlf(d)
		sb.WriteString(body[:cut])
		fmt.Fprintf(&sb, "\n[section cut at %d of %d bytes; read on with %s offset=%d]", cut, len(body), a.call("cat"), off)
		return sb.String(), nil
	}
	sb.WriteString(body)
	return sb.String(), nil
}

// crlf is 1 when the artifact's lines end in "\r\n": section text is
// shown with "\n" only, and offsets into the source must add the "\r"s back.
func crlf(d *doc) int {
	if len(d.lines) > 1 && d.lines[1] >= 2 && d.src[d.lines[1]-2] == '\r' {
		return 1
	}
	return 0
}

// splitPath turns "## Setup > Install" into ["Setup", "Install"].
func splitPath(q string) []string {
	var parts []string
	for _, p := range strings.Split(q, ">") {
		p = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(p), "#"))
		if p != "" {
			parts = append(parts, p)
		}
	}
	return parts
}

// matchHeadings returns the headings whose path ends with want.
func matchHeadings(hs []heading, want []string, fold bool) []heading {
	eq := func(a, b string) bool { return a == b }
	if fold {
		eq = strings.EqualFold
	}
	var out []heading
	for _, h := range hs {
		if len(h.path) < len(want) {
			continue
		}
		tail := h.path[len(h.path)-len(want):]
		ok := true
		for i := range want {
			if !eq(tail[i], want[i]) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, h)
		}
	}
	return out
}

func candidateList(cands []heading) string {
	var sb strings.Builder
	for i, h := range cands {
		if i == MaxListed {
			fmt.Fprintf(&sb, "  … and %d more\n", len(cands)-i)
			break
		}
		fmt.Fprintf(&sb, "  %d. line %d: %s\n", i+1, h.line, clip(strings.Join(h.path, " > "), MaxLineShown))
	}
	return sb.String()
}

func mdFrontMatter(d *doc, a *args) (string, error) {
	if !d.md.hasFront {
		return "no front matter", nil
	}
	fm := strings.ReplaceAll(d.md.frontMatter, "\r\n", "\n")
	if strings.TrimSpace(fm) == "" {
		return "(empty front matter)", nil
	}
	if len(fm) > MaxOutput {
		// Offsets in the note are the body's: the block starts after "---\n".
		start := bytes.IndexByte(d.src, '\n') + 1
		return page(fm, 0, MaxOutput, a.call("cat"), start, start+len(fm)), nil
	}
	return fm, nil
}

func mdCodeBlocks(d *doc, a *args) (string, error) {
	var picked []codeBlock
	var langs []string
	seen := map[string]bool{}
	for _, c := range d.md.codes {
		if c.language != "" && !seen[c.language] {
			seen[c.language] = true
			langs = append(langs, c.language)
		}
		if a.Language == "" || strings.EqualFold(c.language, a.Language) {
			picked = append(picked, c)
		}
	}
	if len(picked) == 0 {
		if a.Language == "" {
			return "no code blocks", nil
		}
		present := "none has a language"
		if len(langs) > 0 {
			present = "languages present: " + strings.Join(langs, ", ")
		}
		return fmt.Sprintf("no code blocks in %q; %s", clip(a.Language, 80), present), nil
	}
	first := 0
	if a.Index > 0 {
		if a.Index > len(picked) {
			return "", fmt.Errorf("index %d asked for, but there are %d blocks", a.Index, len(picked))
		}
		first = a.Index - 1
		picked = picked[first : first+1]
	}
	var sb strings.Builder
	for i, c := range picked {
		var blk strings.Builder
		kind := "indented"
		if c.fenced {
			kind = "fenced"
		}
		lang := c.info
		if lang == "" {
			lang = "no language"
		}
		fmt.Fprintf(&blk, "[block %d: %s, %s, line %d]\n", first+i+1, clip(lang, 80), kind, c.line)
		fence := strings.Repeat("`", max(3, longestRun(c.content, '`')+1))
		blk.WriteString(fence + "\n" + c.content)
		if !strings.HasSuffix(c.content, "\n") && c.content != "" {
			blk.WriteString("\n")
		}
		blk.WriteString(fence + "\n")
		if sb.Len()+blk.Len() > MaxOutput {
			if i == 0 {
				off := d.lines[max(c.line-1, 0)]
				return validPrefix(blk.String(), MaxOutput-200) + fmt.Sprintf("\n[block cut at %d bytes; it starts at line %d: read on with %s offset=%d]", MaxOutput-200, c.line, a.call("cat"), off), nil
			}
			fmt.Fprintf(&sb, "[%d of %d blocks shown; pass index to read block %d and on]\n", i, len(picked), first+i+1)
			return sb.String(), nil
		}
		sb.WriteString(blk.String())
	}
	return sb.String(), nil
}

func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

func mdLinks(d *doc, a *args) (string, error) {
	if len(d.md.links) == 0 {
		return "no links", nil
	}
	lines := make([]string, len(d.md.links))
	for i, l := range d.md.links {
		switch {
		case l.auto:
			lines[i] = fmt.Sprintf("%d: <%s>", l.line, l.url)
		case l.ref != "":
			lines[i] = fmt.Sprintf("%d: [%s][%s] -> %s%s", l.line, l.text, l.ref, l.url, titleSuffix(l.title))
		default:
			lines[i] = fmt.Sprintf("%d: [%s](%s%s)", l.line, l.text, l.url, titleSuffix(l.title))
		}
	}
	return boundedList(lines, "links", a), nil
}

func mdImages(d *doc, a *args) (string, error) {
	if len(d.md.images) == 0 {
		return "no images", nil
	}
	lines := make([]string, len(d.md.images))
	for i, im := range d.md.images {
		lines[i] = fmt.Sprintf("%d: ![%s](%s%s)", im.line, im.alt, im.url, titleSuffix(im.title))
	}
	return boundedList(lines, "images", a), nil
}

func titleSuffix(t string) string {
	if t == "" {
		return ""
	}
	return fmt.Sprintf(" %q", t)
}

func boundedList(lines []string, what string, a *args) string {
	var sb strings.Builder
	for i, l := range lines {
		l = clip(l, MaxLineShown) + "\n"
		if i == MaxListed || sb.Len()+len(l) > MaxOutput-100 {
			fmt.Fprintf(&sb, "[%d of %d %s shown; use %s to find the rest]\n", i, len(lines), what, a.call("grep"))
			break
		}
		sb.WriteString(l)
	}
	return sb.String()
}

func mdText(d *doc, a *args) (string, error) {
	limit, err := limitArg(a)
	if err != nil {
		return "", err
	}
	t := d.plainText()
	if a.Offset < 0 || a.Offset > len(t) {
		return "", fmt.Errorf("offset %d is outside the plain text (%d bytes)", a.Offset, len(t))
	}
	if t == "" {
		return "(no text)", nil
	}
	return page(t, a.Offset, limit, a.call("text"), 0, len(t)), nil
}

// astNode is the JSON shape of one node of the markdown tree.
type astNode struct {
	Kind     string     `json:"kind"`
	Line     int        `json:"line,omitempty"`
	Level    int        `json:"level,omitempty"`
	Text     string     `json:"text,omitempty"`
	Info     string     `json:"info,omitempty"`
	URL      string     `json:"url,omitempty"`
	Children []*astNode `json:"children,omitempty"`
	// Omitted counts children cut by depth or by the output bound.
	Omitted int `json:"omitted_children,omitempty"`
}

func mdAST(d *doc, a *args) (string, error) {
	depth := DefaultDepth
	if a.Depth != nil {
		depth = *a.Depth
		if depth < 1 || depth > MaxDepth {
			return "", fmt.Errorf("depth must be between 1 and %d, not %d", MaxDepth, depth)
		}
	}
	// The budget is an estimate (JSON escaping can grow a text); halve it
	// until the rendering fits.
	for limit := MaxOutput - 512; ; limit /= 2 {
		budget := limit
		b, err := json.Marshal(d.astJSON(d.md.root, depth, &budget))
		if err != nil {
			return "", fmt.Errorf("render tree: %v", err)
		}
		if len(b) <= MaxOutput-200 || limit < 64 {
			out := string(b)
			if budget <= 0 {
				out += "\n[tree cut to stay under the output bound; ask for less depth or read a section]"
			}
			return out, nil
		}
	}
}

// astJSON converts n, depth levels down, spending budget (an estimate of
// output bytes); what does not fit is counted in Omitted.
func (d *doc) astJSON(n ast.Node, depth int, budget *int) *astNode {
	ix := d.md
	out := &astNode{Kind: n.Kind().String()}
	if p := n.Pos(); p >= 0 {
		out.Line = lineAt(d.lines, ix.base+p)
	}
	switch n := n.(type) {
	case *ast.Heading:
		out.Level = n.Level
		out.Text = clip(inlineText(n, ix.src, " "), 80)
	case *ast.Text:
		out.Text = clip(strings.TrimSuffix(string(n.Segment.Value(ix.src)), "\r"), 80)
	case *ast.String:
		out.Text = clip(string(n.Value), 80)
	case *ast.FencedCodeBlock:
		if n.Info != nil {
			out.Info = clip(strings.TrimSpace(string(n.Info.Segment.Value(ix.src))), 80)
		}
	case *ast.Link:
		out.URL = clip(string(n.Destination), 200)
	case *ast.Image:
		out.URL = clip(string(n.Destination), 200)
	case *ast.AutoLink:
		out.URL = clip(string(n.URL(ix.src)), 200)
	}
	*budget -= 40 + len(out.Kind) + len(out.Text) + len(out.Info) + len(out.URL)
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if depth == 0 || *budget <= 0 {
			out.Omitted++
			continue
		}
		out.Children = append(out.Children, d.astJSON(c, depth-1, budget))
	}
	return out
}
