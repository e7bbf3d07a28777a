package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// A skill's mcp: block decodes to servers in file order, stdio and HTTP,
// and its agents may list MCP tools as SERVER/TOOL or SERVER/*.
func TestMCPServersDecode(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "server"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tracker.skill.yaml")
	src := `id: tracker
name: Tracker
description: Files issues.
version: 1.0.0
instructions: Use the tracker.
agents:
  filer: {tools: [notes/search, remote/*]}
mcp:
  notes:
    command: [go, run, ./server]
    env: [GOCACHE]
    cwd: server
    tools: [search]
    timeout: 5s
  remote:
    url: https://mcp.example.com/mcp
    headers: {Authorization: TRACKER_TOKEN}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, diags := LoadSkill(path)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	want := []MCPServer{
		{Name: "notes", Command: []string{"go", "run", "./server"}, Env: []string{"GOCACHE"}, Cwd: "server", Tools: []string{"search"}, Timeout: 5 * time.Second},
		{Name: "remote", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "TRACKER_TOKEN"}},
	}
	if d := cmp.Diff(want, s.MCP, cmpopts.IgnoreFields(MCPServer{}, "Node")); d != "" {
		t.Errorf("servers (-want +got):\n%s", d)
	}
	if !s.MCP[0].Stdio() || s.MCP[1].Stdio() {
		t.Errorf("Stdio: %v %v", s.MCP[0].Stdio(), s.MCP[1].Stdio())
	}
	if !s.MCP[0].Allows("search") || s.MCP[0].Allows("delete") || !s.MCP[1].Allows("anything") {
		t.Errorf("Allows disagrees with the allowlist")
	}
}

// A skill's mcp: may name a Claude Code .mcp.json: its servers map onto
// MCPServer as written, and its problems are reported at their line and
// column in the JSON file.
func TestMCPJSON(t *testing.T) {
	dir := writeTree(t, map[string]string{
		".mcp.json": `{
  "mcpServers": {
    "notes": {
      "command": "npx",
      "args": ["-y", "@acme/notes-mcp"],
      "env": {"NOTES_TOKEN": "${NOTES_TOKEN}", "MODE": "fast"},
      "timeout": 5
    },
    "Tracker_2": {
      "type": "http",
      "url": "https://mcp.example.com/mcp",
      "headers": {"Authorization": "Bearer ${TRACKER_TOKEN:-none}"}
    },
    "old": {"type": "sse", "url": "https://x.example.com/sse"},
    "bad": {"command": "x", "env": {"A": "${B"}}
  }
}
`,
		"sk/sk.skill.yaml": "id: sk\nname: sk\ndescription: d\nversion: 1.0.0\ninstructions: x\nmcp: ../.mcp.json\n",
	})
	s, diags := LoadSkill(filepath.Join(dir, "sk", "sk.skill.yaml"))
	var got []string
	for _, d := range diags {
		rel, _ := filepath.Rel(dir, d.Pos.File)
		got = append(got, fmt.Sprintf("%s:%d:%d: %s", rel, d.Pos.Line, d.Pos.Col, d.Message))
	}
	want := []string{
		`.mcp.json:7:7: unknown key "timeout"`,
		`.mcp.json:14:21: MCP server "old": fsd speaks Streamable HTTP, not the older SSE transport`,
		`.mcp.json:15:12: MCP server "bad": "${B": a ${ that is not ${VAR} or ${VAR:-default}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
	if s == nil || len(s.MCP) != 4 {
		t.Fatalf("servers: %+v", s)
	}
	notes, tracker := s.MCP[0], s.MCP[1]
	from := filepath.Join(dir, "sk", "..", ".mcp.json")
	if diff := cmp.Diff([]string{"npx", "-y", "@acme/notes-mcp"}, notes.Command); diff != "" || !notes.Expand || filepath.Clean(notes.From) != filepath.Clean(from) {
		t.Errorf("notes: %+v %s", notes, diff)
	}
	if diff := cmp.Diff(map[string]string{"NOTES_TOKEN": "${NOTES_TOKEN}", "MODE": "fast"}, notes.EnvValues); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if tracker.Name != "Tracker_2" || tracker.URL != "https://mcp.example.com/mcp" || tracker.HeaderValues["Authorization"] != "Bearer ${TRACKER_TOKEN:-none}" {
		t.Errorf("tracker: %+v", tracker)
	}
	if diff := cmp.Diff([]string{"NOTES_TOKEN"}, notes.Vars()); diff != "" {
		t.Errorf("vars (-want +got):\n%s", diff)
	}
	lookup := func(k string) (string, bool) { v, ok := map[string]string{"SET": "v", "EMPTY": ""}[k]; return v, ok }
	for in, want := range map[string]string{"a${SET}b": "avb", "${EMPTY:-d}": "d", "${UNSET:-}x": "x", "plain": "plain"} {
		if got, err := Expand(in, lookup); err != nil || got != want {
			t.Errorf("Expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Expand("${UNSET}", lookup); err == nil || !strings.Contains(err.Error(), "UNSET is not set") {
		t.Errorf("Expand of an unset variable: %v", err)
	}
}
