package spec

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/diag"
)

// AllowedTool is one entry of a skill's allowed-tools, as Claude Code
// writes it: a tool name (Bash, Write, a skill tool, mcp__server__tool),
// optionally with a specifier in parentheses that narrows it to some calls
// (Bash(git diff:*), Edit(./src/**)). What an entry grants is decided
// where calls are checked (package approval); here is what may be written.
type AllowedTool struct {
	// Text is the entry as written.
	Text string
	// Tool is the name before the parentheses.
	Tool string
	// Spec is what is between the parentheses; HasSpec tells Bash() from
	// Bash.
	Spec    string
	HasSpec bool
}

// specTools are the tools whose calls a specifier can narrow: Bash by its
// command line, the file tools by the path they read or write.
var specTools = map[string]bool{"Bash": true, "Read": true, "Write": true, "Edit": true}

// ParseAllowedTool parses one allowed-tools entry. problem is non-empty
// when fsd cannot honour the entry: it then grants nothing, and validate
// says why (a warning: a SKILL.md written for another product still loads).
func ParseAllowedTool(s string) (t AllowedTool, problem string) {
	t = AllowedTool{Text: s, Tool: s}
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return t, "an entry with ( ends with ), as in Bash(git diff:*)"
		}
		t.Tool, t.Spec, t.HasSpec = s[:i], s[i+1:len(s)-1], true
	}
	name := t.Tool
	if mcp := strings.HasPrefix(name, MCPToolPrefix); mcp {
		// mcp__server__* names all of a server's tools.
		name = strings.TrimSuffix(name, "__*")
	}
	if name == "" || strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) {
		return t, fmt.Sprintf("%q is not a tool name (letters, digits, _ and -; mcp__server__* for all of a server's tools)", t.Tool)
	}
	if !t.HasSpec {
		return t, ""
	}
	switch {
	case !specTools[t.Tool]:
		return t, fmt.Sprintf("fsd narrows only Bash, Read, Write and Edit by a specifier; write %s alone to allow all its calls", t.Tool)
	case strings.TrimSpace(t.Spec) == "":
		return t, fmt.Sprintf("%s() is empty; write %s alone to allow all its calls", t.Tool, t.Tool)
	case t.Tool != "Bash" && strings.HasPrefix(t.Spec, "~"):
		return t, "paths under the home folder (~/…) are not supported; write a path relative to the workspace or //absolute/path"
	}
	return t, ""
}

// decodeAllowedTools reads allowed-tools, a string (split as
// SplitAllowedTools does) or a list, and warns at each entry fsd cannot
// honour.
func decodeAllowedTools(d *decoder, n *yaml.Node) []string {
	var (
		out []string
		pos []diag.Pos
	)
	if v, ok := str(n); ok {
		for _, e := range splitAllowed(v) {
			out = append(out, e.text)
			pos = append(pos, d.entryPos(n, v, e.off))
		}
	} else {
		out, pos = d.strList(n)
	}
	for i, e := range out {
		if _, problem := ParseAllowedTool(e); problem != "" {
			d.diags = append(d.diags, diag.Warnf(pos[i], "allowed-tools", "allowed-tools entry %q grants nothing: %s", e, problem))
		}
	}
	return out
}

// entryPos is where the entry at byte offset off of a string scalar
// starts: exact on a one-line plain or quoted scalar, the scalar's own
// position otherwise (escapes and folded lines do not map back simply).
func (d *decoder) entryPos(n *yaml.Node, v string, off int) diag.Pos {
	p := d.pos(n)
	if strings.ContainsAny(v, "\n\\'") {
		return p
	}
	switch n.Style {
	case 0:
	case yaml.SingleQuotedStyle, yaml.DoubleQuotedStyle:
		p.Col++
	default:
		return p
	}
	p.Col += utf8.RuneCountInString(v[:off])
	return p
}

// SplitAllowedTools splits an allowed-tools string at spaces and commas
// outside parentheses, so a pattern such as Bash(git diff:*) stays whole.
func SplitAllowedTools(s string) []string {
	var out []string
	for _, e := range splitAllowed(s) {
		out = append(out, e.text)
	}
	return out
}

type allowedEntry struct {
	text string
	off  int // byte offset in the string
}

func splitAllowed(s string) []allowedEntry {
	var out []allowedEntry
	depth, start := 0, -1
	for i, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0 && (r == ',' || unicode.IsSpace(r)):
			if start >= 0 {
				out = append(out, allowedEntry{s[start:i], start})
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, allowedEntry{s[start:], start})
	}
	return out
}
