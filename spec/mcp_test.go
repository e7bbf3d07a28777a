package spec

import (
	"os"
	"path/filepath"
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
