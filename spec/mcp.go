package spec

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/internal/lazyre"
)

// MCPServer is one Model Context Protocol server a skill brings: a local
// program spoken to over stdio (Command set) or a Streamable HTTP endpoint
// (URL set). Its tools are offered while the skill is loaded.
type MCPServer struct {
	Node
	// Name is the server's name inside the skill (the key under `mcp:`).
	Name string `json:"name"`
	// Command is the stdio server's argv, run without a shell; a relative
	// argv[0] containing a slash is relative to the skill's folder.
	Command []string `json:"command,omitempty"`
	// Env names environment variables the server inherits beyond PATH and
	// HOME, as for command tools.
	Env []string `json:"env,omitempty"`
	// Cwd is the server's working folder, relative to and inside the
	// skill's folder ("" is the skill's folder).
	Cwd string `json:"cwd,omitempty"`
	// URL is the Streamable HTTP endpoint.
	URL string `json:"url,omitempty"`
	// Headers maps an HTTP header to the name of the environment variable
	// whose value it carries: secrets never sit in the manifest.
	Headers map[string]string `json:"headers,omitempty"`
	// Tools is the allowlist of the server's tool names; nil offers all.
	Tools []string `json:"tools,omitempty"`
	// Timeout bounds one call; zero means the runtime default.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Approve is the approval policy of the server's tools; "" defers to
	// the skill's and the workflow's.
	Approve Approve `json:"approve,omitempty"`
	// From is the Claude Code .mcp.json the server was read from ("":
	// the manifest). Such a server's Command, URL, EnvValues and
	// HeaderValues may hold ${VAR} and ${VAR:-default} (Expand), read
	// from the environment when it starts.
	From string `json:"from,omitempty"`
	// Expand says the values may hold ${VAR}.
	Expand bool `json:"-"`
	// EnvValues are variables given to the server by value, after Env.
	EnvValues map[string]string `json:"-"`
	// HeaderValues are HTTP headers given by value, after Headers.
	HeaderValues map[string]string `json:"-"`
	// Sandbox is what a stdio server asks of the sandbox (network,
	// max-procs); nil asks nothing. See SandboxFor.
	Sandbox *Sandbox `json:"sandbox,omitempty"`
}

// Stdio reports whether the server is a local program (else HTTP).
func (m *MCPServer) Stdio() bool { return len(m.Command) > 0 }

// Allows reports whether the allowlist lets the server's tool name through.
func (m *MCPServer) Allows(tool string) bool {
	return m.Tools == nil || slices.Contains(m.Tools, tool)
}

// MCPServer returns the skill's MCP server named name.
func (s *Skill) MCPServer(name string) (*MCPServer, bool) {
	for i := range s.MCP {
		if s.MCP[i].Name == name {
			return &s.MCP[i], true
		}
	}
	return nil, false
}

var (
	mcpKeys = []string{"command", "env", "cwd", "url", "headers", "tools", "timeout", "approve", "sandbox"}
	// mcpToolName is the MCP spec's tool name alphabet.
	mcpToolName = lazyre.New(`^[A-Za-z0-9_.-]{1,128}$`)
	envName     = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerName  = lazyre.New("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// MCPToolPrefix starts the name of every MCP tool offered to a model; skill
// tools may not use it, so the two never clash.
const MCPToolPrefix = "mcp__"

func decodeMCP(d *decoder, n *yaml.Node, s *Skill) {
	if n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		decodeMCPJSON(d, n, s)
		return
	}
	var holder Node
	for _, p := range d.pairs(n, &holder) {
		m := MCPServer{Name: p.key}
		var cmdN, urlN, envN, cwdN, hdrN, sbN *yaml.Node
		for _, f := range d.fields(p.v, mcpKeys, &m.Node) {
			switch f.key {
			case "command":
				cmdN = f.v
				m.Command, _ = d.strList(f.v)
			case "env":
				envN = f.v
				m.Env, _ = d.strList(f.v)
			case "cwd":
				cwdN = f.v
				m.Cwd, _ = str(f.v)
			case "url":
				urlN = f.v
				m.URL, _ = str(f.v)
			case "headers":
				hdrN = f.v
				var hn Node
				for _, h := range d.pairs(f.v, &hn) {
					v, ok := str(h.v)
					if !ok {
						continue // the schema says it must be a string
					}
					if m.Headers == nil {
						m.Headers = map[string]string{}
					}
					m.Headers[h.key] = v
					if !headerName().MatchString(h.key) {
						d.errorf(h.k, "mcp", "%q is not an HTTP header name", h.key)
					}
					if !envName().MatchString(v) {
						d.errorf(h.v, "mcp", "header %s: %q is not an environment variable name", h.key, v).Hint =
							"headers name the environment variable that holds the value (e.g. Authorization: TRACKER_TOKEN), never the secret itself"
					}
				}
			case "tools":
				decodeAllowlist(d, f.v, &m)
			case "timeout":
				m.Timeout = d.duration(f.v)
			case "approve":
				m.Approve = decodeApprove(d, f.v)
			case "sandbox":
				sbN = f.v
				m.Sandbox = decodeSandbox(d, f.v, false)
			}
		}
		if m.Pos.Line == 0 {
			m.Pos = d.pos(p.k)
		}
		at := p.v
		if at == nil || at.Kind != yaml.MappingNode {
			s.MCP = append(s.MCP, m)
			continue // the schema reports it
		}
		if !ValidID(m.Name) || len(m.Name) > 32 {
			d.errorf(p.k, "mcp", "MCP server name %q is not an id of at most 32 bytes: ids are %s", m.Name, IDRule)
		}
		switch {
		case !oneTransport(d, p.k, cmdN, urlN, m.Name):
		case cmdN != nil:
			emptyProgram(d, cmdN, &m)
			if hdrN != nil {
				d.errorf(hdrN, "mcp", "headers apply only to a url server")
			}
			if m.Cwd != "" {
				checkCwd(d, s.Dir, m.Cwd, cwdN)
			}
		default:
			checkURL(d, urlN, m.URL)
			for x, key := range map[*yaml.Node]string{envN: "env", cwdN: "cwd", sbN: "sandbox"} {
				if x != nil {
					d.errorf(x, "mcp", "%s applies only to a command server", key)
				}
			}
		}
		s.MCP = append(s.MCP, m)
	}
}

// oneTransport reports whether a server sets exactly one of command and
// url, and says what is wrong when it does not.
func oneTransport(d *decoder, key, cmdN, urlN *yaml.Node, name string) bool {
	switch {
	case cmdN == nil && urlN == nil:
		d.errorf(key, "mcp", "MCP server %q needs command (a stdio server) or url (Streamable HTTP)", name)
	case cmdN != nil && urlN != nil:
		d.errorf(urlN, "mcp", "MCP server %q sets both command and url; keep one", name)
	default:
		return true
	}
	return false
}

// emptyProgram reports a stdio server whose program is "".
func emptyProgram(d *decoder, cmdN *yaml.Node, m *MCPServer) {
	if len(m.Command) > 0 && m.Command[0] == "" {
		d.errorf(cmdN, "mcp", "MCP server %q: the command's program is empty", m.Name)
	}
}

func decodeAllowlist(d *decoder, n *yaml.Node, m *MCPServer) {
	names, pos := d.strList(n)
	if names == nil {
		names = []string{}
	}
	m.Tools = names
	if nn := deref(n); nn != nil && nn.Kind == yaml.SequenceNode && len(nn.Content) == 0 {
		d.errorf(n, "mcp", "the tools allowlist of MCP server %q names no tools", m.Name).Hint = "omit tools: to offer every tool of the server"
	}
	seen := map[string]bool{}
	for i, t := range names {
		p := pos[i]
		switch {
		case !mcpToolName().MatchString(t):
			d.diags = append(d.diags, diag.Errorf(p, "mcp", "%q is not an MCP tool name (1-128 of A-Z, a-z, 0-9, _, - and .)", t))
		case seen[t]:
			d.diags = append(d.diags, diag.Errorf(p, "duplicate", "tool %q is listed twice in the allowlist", t))
		}
		seen[t] = true
	}
}

func checkURL(d *decoder, n *yaml.Node, raw string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		d.errorf(n, "mcp", "invalid url %q: %v", raw, unwrapURLError(err))
	case u.Scheme != "http" && u.Scheme != "https":
		d.errorf(n, "mcp", "invalid url %q: the scheme must be http or https", raw)
	case u.Host == "":
		d.errorf(n, "mcp", "invalid url %q: no host", raw)
	case u.User != nil:
		d.errorf(n, "mcp", "the url %q carries credentials", raw).Hint = "take secrets from the environment: headers: {Authorization: VARIABLE_NAME}"
	}
}

func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

func checkCwd(d *decoder, dir, rel string, n *yaml.Node) {
	full, problem := inside(dir, rel)
	if problem != "" {
		d.errorf(n, "path", "cwd: %s", problem)
		return
	}
	if fi, err := os.Stat(full); err == nil && !fi.IsDir() {
		d.errorf(n, "path", "cwd %q is not a folder", rel)
	}
}

// mcpRef checks an agent's tools entry of the form SERVER/TOOL or SERVER/*
// and says what is wrong with it ("" when it names something).
func (s *Skill) mcpRef(ref string) (string, bool) {
	server, tool, ok := strings.Cut(ref, "/")
	if !ok {
		return "", false
	}
	m, found := s.MCPServer(server)
	if !found {
		return fmt.Sprintf("this skill declares no MCP server %q", server), true
	}
	if tool != "*" && !mcpToolName().MatchString(tool) {
		return "after the server name comes a tool name or *", true
	}
	if tool != "*" && !m.Allows(tool) {
		return fmt.Sprintf("MCP server %q's tools allowlist leaves out %q", server, tool), true
	}
	return "", true
}
