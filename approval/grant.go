package approval

// A loaded skill's allowed-tools: the calls it lets run without asking.
// The patterns are Claude Code's, so a SKILL.md written for it means the
// same here; where fsd is stricter it asks rather than guesses.

import (
	"encoding/json"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// Call is a tool call as allowed-tools entries see it.
type Call struct {
	// Name is the tool's name as offered to the model.
	Name string
	// Args are the call's arguments: Bash's command, the file tools'
	// file_path.
	Args json.RawMessage
	// Server and Remote name an MCP tool's server and the server's own
	// name for the tool, so Claude Code's mcp__SERVER__TOOL matches it as
	// well as fsd's mcp__SKILL__SERVER__TOOL.
	Server, Remote string
	// Workspace is the folder a relative path pattern (Edit(./src/**))
	// and a relative file_path are taken from; "" matches only relative
	// paths against relative patterns.
	Workspace string
}

// Rules is one skill's allowed-tools, parsed: the entries fsd cannot
// honour (spec.ParseAllowedTool's problems) are left out.
type Rules struct {
	skill string
	rules []spec.AllowedTool
}

// NewRules parses the allowed-tools of skill s.
func NewRules(s *spec.Skill) Rules {
	r := Rules{skill: s.ID}
	for _, e := range s.AllowedTools {
		if t, problem := spec.ParseAllowedTool(e); problem == "" {
			r.rules = append(r.rules, t)
		}
	}
	return r
}

// Grant returns the first entry that allows c: the skill and the entry
// that let it run without asking.
func (r Rules) Grant(c Call) (runrecord.Grant, bool) {
	for _, t := range r.rules {
		if allows(t, c) {
			return runrecord.Grant{Skill: r.skill, Rule: t.Text}, true
		}
	}
	return runrecord.Grant{}, false
}

// allows reports whether one entry lets c run.
func allows(t spec.AllowedTool, c Call) bool {
	if strings.HasPrefix(t.Tool, spec.MCPToolPrefix) {
		return allowsMCP(t.Tool, c)
	}
	if t.Tool != c.Name {
		return false
	}
	if !t.HasSpec {
		return true
	}
	var a struct {
		Command  *string `json:"command"`
		FilePath *string `json:"file_path"`
	}
	if json.Unmarshal(c.Args, &a) != nil {
		return false
	}
	if t.Tool == "Bash" {
		return a.Command != nil && CommandMatches(t.Spec, *a.Command)
	}
	if a.FilePath == nil || !PathMatches(t.Spec, *a.FilePath, c.Workspace) {
		return false
	}
	if c.Workspace == "" {
		return true
	}
	// The file the call would change must fit too: Write(notes/**) does
	// not reach src/main.go through a link notes/x -> ../src/main.go.
	p := *a.FilePath
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.Workspace, p)
	}
	return PathMatches(t.Spec, resolved(p), resolved(c.Workspace))
}

// resolved is the absolute path p with the symlinks of its longest
// existing part resolved (a file a Write would make does not exist yet).
func resolved(p string) string {
	dir, rest := filepath.Clean(p), ""
	for {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return p
		}
		rest, dir = filepath.Join(filepath.Base(dir), rest), parent
	}
}

// allowsMCP matches an MCP entry: a whole name, a server (mcp__server, or
// mcp__server__*) — in fsd's names (mcp__SKILL__SERVER__TOOL, where
// mcp__SKILL__SERVER is a server) or Claude Code's (mcp__SERVER__TOOL).
func allowsMCP(p string, c Call) bool {
	names := []string{c.Name}
	if c.Server != "" {
		names = append(names, spec.MCPToolPrefix+c.Server+"__"+c.Remote)
	}
	p = strings.TrimSuffix(p, "__*")
	for _, n := range names {
		if strings.HasPrefix(n, spec.MCPToolPrefix) && (n == p || strings.HasPrefix(n, p+"__")) {
			return true
		}
	}
	return false
}

// shellMeta are the characters by which one command line runs more than
// its first command, or writes where its words do not say: a wildcard
// never matches them, so Bash(git diff *) does not allow
// `git diff; rm -rf ~` or `git diff > notes`.
const shellMeta = ";&|<>$`\n\r"

// CommandMatches reports whether a Bash command line fits spec: exact
// text; `*` for any run of characters but shellMeta; a trailing ` *`
// (or Claude Code's older `:*`) for the command alone or followed by a
// space and arguments — a prefix at a word boundary, so `git diff:*`
// allows `git diff HEAD` but not `git difftool`. `\*` is a literal star.
// The command is compared with its surrounding blanks trimmed.
func CommandMatches(spec, command string) bool {
	if spec == "*" {
		return true // Claude Code's Bash(*) is Bash
	}
	command = strings.TrimSpace(command)
	if s, ok := strings.CutSuffix(spec, ":*"); ok && !strings.HasSuffix(s, `\`) {
		spec = s + " *"
	}
	var re strings.Builder
	re.WriteString(`^`)
	anyRun := `[^` + regexp.QuoteMeta(shellMeta) + `]*`
	for i := 0; i < len(spec); i++ {
		switch c := spec[i]; {
		case c == '\\' && i+1 < len(spec) && (spec[i+1] == '*' || spec[i+1] == '\\'):
			re.WriteString(regexp.QuoteMeta(spec[i+1 : i+2]))
			i++
		case c == '*' && i == len(spec)-1 && i > 0 && spec[i-1] == ' ':
			// Written " *" at the end: the command alone fits too.
			return matchRe(re.String()[:re.Len()-1]+`(?: `+anyRun+`)?$`, command) // drop the space just written
		case c == '*':
			re.WriteString(anyRun)
		default:
			re.WriteString(regexp.QuoteMeta(spec[i : i+1]))
		}
	}
	re.WriteString(`$`)
	return matchRe(re.String(), command)
}

func matchRe(expr, s string) bool {
	re, err := regexp.Compile(expr)
	return err == nil && re.MatchString(s)
}

// PathMatches reports whether the file path p (absolute, or relative to
// the workspace) fits the gitignore-style pattern spec: `//abs/…` is an
// absolute path; any other pattern (`./src/**`, `src/**`, `/src/**`) is
// relative to the workspace. `*` and `?` stay within a folder, `**` spans
// folders, a pattern without a slash matches a name at any depth, and a
// pattern that matches a folder matches everything under it. A path that
// leaves the workspace never fits a relative pattern.
func PathMatches(spec, p, workspace string) bool {
	if p == "" {
		return false
	}
	p = filepath.ToSlash(p)
	if abs, ok := strings.CutPrefix(spec, "//"); ok {
		if !path.IsAbs(p) {
			if workspace == "" {
				return false
			}
			p = path.Join(filepath.ToSlash(workspace), p)
		}
		if strings.HasSuffix(abs, "/") {
			abs = path.Clean("/"+abs) + "/"
		} else {
			abs = path.Clean("/" + abs)
		}
		return globMatch(abs, path.Clean(p))
	}
	if path.IsAbs(p) {
		if workspace == "" {
			return false
		}
		rel, err := filepath.Rel(workspace, filepath.FromSlash(p))
		if err != nil {
			return false
		}
		p = filepath.ToSlash(rel)
	}
	p = path.Clean(p)
	if p == ".." || strings.HasPrefix(p, "../") {
		return false
	}
	pat := strings.TrimPrefix(strings.TrimPrefix(spec, "./"), "/")
	if !strings.Contains(strings.TrimSuffix(pat, "/"), "/") {
		pat = "**/" + pat // gitignore: a bare name is matched at any depth
	}
	return globMatch(pat, p)
}

// globMatch matches a slash-separated path against a gitignore-style
// pattern: `**` stands for any number of folders (none included), and a
// pattern that matches a folder matches everything under it; one ending
// in / matches only folders.
func globMatch(pat, p string) bool {
	pat, p = strings.TrimPrefix(pat, "/"), strings.TrimPrefix(p, "/")
	dirOnly := strings.HasSuffix(pat, "/")
	ps, segs := strings.Split(strings.TrimSuffix(pat, "/"), "/"), strings.Split(p, "/")
	for k := len(segs); k > 0; k-- {
		if dirOnly && k == len(segs) {
			continue // the file itself is no folder
		}
		if segMatch(ps, segs[:k]) {
			return true
		}
	}
	return false
}

func segMatch(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if segMatch(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], segs[0]); err != nil || !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}
