package spec

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/internal/lazyre"
)

// A skill's `mcp:` may name a Claude Code .mcp.json instead of listing its
// servers: {"mcpServers": {NAME: {type, command, args, env, url,
// headers}}}. The file is used as written. Its values may hold ${VAR} and
// ${VAR:-default}, read from the environment when the server starts, as
// Claude Code reads them; its env and headers are given by value.

var (
	mcpJSONKeys       = []string{"mcpServers"}
	mcpJSONServerKeys = []string{"type", "command", "args", "env", "url", "headers"}
	// mcpJSONName is the names a .mcp.json may use: they are kept as
	// written, so a file other clients read needs no edit.
	mcpJSONName = lazyre.New(`^[A-Za-z0-9_-]{1,32}$`)
	// mcpVar is one ${VAR} or ${VAR:-default}; mcpDollar finds every ${.
	mcpVar = lazyre.New(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)
)

// decodeMCPJSON (C10) loads the servers of the .mcp.json that n names (relative
// to the skill's folder; a leading ~ is the home folder). Problems in the
// file are reported at their line and column in it.
func decodeMCPJSON(d *decoder, n *yaml.Node, s *Skill) {
	rel, _ := str(n)
	path := ExpandPath(rel, s.Dir)
	data, diags := readFile(path)
	if diags == nil {
		diags = checkText(path, data)
	}
	if diags != nil {
		d.errorf(n, "mcp", "mcp %q: %s", rel, diags[0].Message)
		return
	}
	root, diags := parseYAML(path, data)
	if diags != nil {
		d.diags = append(d.diags, diags...)
		return
	}
	jd := &decoder{file: path, unknown: diag.Warning}
	var holder Node
	var servers *yaml.Node
	for _, f := range jd.fields(root, mcpJSONKeys, &holder) {
		servers = f.v
	}
	if servers == nil || servers.Kind != yaml.MappingNode {
		jd.errorf(root, "mcp", "%s has no mcpServers object", rel).Hint = `a Claude Code .mcp.json: {"mcpServers": {"name": {"command": "npx", "args": ["-y", "pkg"]}}}`
	}
	for _, p := range jd.pairs(servers, &holder) {
		if m, ok := decodeMCPJSONServer(jd, p, path); ok {
			s.MCP = append(s.MCP, m)
		}
	}
	d.diags = append(d.diags, jd.diags...)
}

func decodeMCPJSONServer(d *decoder, p field, path string) (MCPServer, bool) {
	m := MCPServer{Name: p.key, Expand: true, From: path}
	m.Pos = d.pos(p.k)
	if !mcpJSONName().MatchString(p.key) {
		d.errorf(p.k, "mcp", "MCP server name %q is not 1-32 of A-Z, a-z, 0-9, _ and -", p.key)
	}
	if p.v == nil || p.v.Kind != yaml.MappingNode {
		d.errorf(p.k, "mcp", "MCP server %q is not an object", p.key)
		return m, false
	}
	var typ string
	var typN, cmdN, urlN *yaml.Node
	var args []string
	for _, f := range d.fields(p.v, mcpJSONServerKeys, &m.Node) {
		switch f.key {
		case "type":
			typN = f.v
			typ = jsonString(d, f.v, "type")
		case "command":
			cmdN = f.v
			m.Command = []string{jsonString(d, f.v, "command")}
		case "args":
			args, _ = d.strList(f.v)
		case "url":
			urlN = f.v
			m.URL = jsonString(d, f.v, "url")
		case "env":
			m.EnvValues = jsonStrings(d, f.v, "env", envName())
		case "headers":
			m.HeaderValues = jsonStrings(d, f.v, "headers", headerName())
		}
	}
	m.Pos = d.pos(p.k)
	switch typ {
	case "", "stdio", "http", "streamable-http":
	case "sse":
		d.errorf(typN, "mcp", "MCP server %q: fsd speaks Streamable HTTP, not the older SSE transport", p.key).Hint = `most servers serve both: set "type": "http" and the server's Streamable HTTP url`
	default:
		d.errorf(typN, "mcp", "MCP server %q: type %q is not stdio or http", p.key, typ)
	}
	switch {
	case !oneTransport(d, p.k, cmdN, urlN, p.key):
	case cmdN != nil:
		m.Command = append(m.Command, args...)
		emptyProgram(d, cmdN, &m)
		if m.HeaderValues != nil {
			d.errorf(p.v, "mcp", "MCP server %q: headers apply only to a url server", p.key)
		}
	default:
		if !strings.Contains(m.URL, "${") {
			checkURL(d, urlN, m.URL)
		}
		if m.EnvValues != nil || args != nil {
			d.errorf(p.v, "mcp", "MCP server %q: env and args apply only to a command server", p.key)
		}
	}
	for _, v := range m.templates() {
		if bad := badTemplate(v); bad != "" {
			d.errorf(p.v, "mcp", "MCP server %q: %q: %s", p.key, v, bad)
		}
	}
	return m, true
}

// jsonString is a string value, reported when it is something else.
func jsonString(d *decoder, n *yaml.Node, key string) string {
	v, ok := str(n)
	if !ok {
		d.errorf(n, "mcp", "%s must be a string", key)
	}
	return v
}

// jsonStrings is an object of strings (env, headers) whose names match
// names.
func jsonStrings(d *decoder, n *yaml.Node, key string, names *regexp.Regexp) map[string]string {
	if n == nil || n.Kind != yaml.MappingNode {
		d.errorf(n, "mcp", "%s must be an object of strings", key)
		return nil
	}
	out := map[string]string{}
	var holder Node
	for _, f := range d.pairs(n, &holder) {
		if !names.MatchString(f.key) {
			d.errorf(f.k, "mcp", "%s: %q is not a valid name", key, f.key)
		}
		out[f.key] = jsonString(d, f.v, key+"."+f.key)
	}
	return out
}

// badTemplate says what is wrong with a value's ${…}, "" when nothing.
func badTemplate(v string) string {
	rest := mcpVar().ReplaceAllString(v, "")
	if strings.Contains(rest, "${") {
		return "a ${ that is not ${VAR} or ${VAR:-default}"
	}
	return ""
}

// templates are the server's values that may hold ${VAR}.
func (m *MCPServer) templates() []string {
	out := append([]string{m.URL}, m.Command...)
	for _, v := range m.EnvValues {
		out = append(out, v)
	}
	for _, v := range m.HeaderValues {
		out = append(out, v)
	}
	return out
}

// Vars are the environment variables a .mcp.json server's values name,
// sorted: fsd masks their values in what the server returns.
func (m *MCPServer) Vars() []string {
	seen := map[string]bool{}
	for _, v := range m.templates() {
		for _, sub := range mcpVar().FindAllStringSubmatch(v, -1) {
			seen[sub[1]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// Literals are the env and header values a .mcp.json writes out with no
// ${VAR} (a key may sit in the file itself): fsd masks them too.
func (m *MCPServer) Literals() []string {
	var out []string
	for _, vals := range []map[string]string{m.EnvValues, m.HeaderValues} {
		for _, v := range vals {
			if !mcpVar().MatchString(v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// Expand replaces ${VAR} and ${VAR:-default} in v with the value lookup
// finds (the default when VAR is unset or empty). A variable with neither
// a value nor a default is an error naming it, as Claude Code's is.
func Expand(v string, lookup func(string) (string, bool)) (string, error) {
	var missing []string
	out := mcpVar().ReplaceAllStringFunc(v, func(m string) string {
		sub := mcpVar().FindStringSubmatch(m)
		if val, ok := lookup(sub[1]); ok && val != "" {
			return val
		}
		if strings.Contains(m, ":-") {
			return sub[2]
		}
		missing = append(missing, sub[1])
		return ""
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("environment variable %s is not set", strings.Join(missing, ", "))
	}
	return out, nil
}
