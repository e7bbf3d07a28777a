package mcptool

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fsdrun/fsd/internal/mcptest"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/spec"
)

// mcpJSONSkill writes a skill whose mcp: names a Claude Code .mcp.json
// one folder up holding servers, and loads it as fsd would.
func mcpJSONSkill(t *testing.T, servers map[string]any) *spec.Skill {
	t.Helper()
	dir := t.TempDir()
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "tracker"), 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "tracker", "tracker.skill.yaml")
	if err := os.WriteFile(manifest, []byte("id: tracker\nname: t\ndescription: d\nversion: 1.0.0\ninstructions: x\nmcp: ../.mcp.json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, diags := spec.LoadSkill(manifest)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

// A .mcp.json is used as written: command and args, env by value with
// ${VAR} and ${VAR:-default} read from the environment, and for a url
// server its headers, "Bearer ${TOKEN}" included. A variable with no
// value and no default keeps the server from starting, naming it.
func TestMCPJSONServers(t *testing.T) {
	testpar.UnlessRace(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	e.vars["CALL_LOG"] = e.log
	s := mcpJSONSkill(t, map[string]any{"t": map[string]any{
		"command": exe, "args": []string{"-test.run=^$"},
		"env": map[string]string{mcptest.EnvServe: "${SERVE:-stdio}", mcptest.EnvLog: "${CALL_LOG}"},
	}})
	p := newPool(t, e, Options{})
	tools, notes := p.Acquire(context.Background(), s)
	if len(notes) > 0 || byName(tools)["echo"] == nil {
		t.Fatalf("stdio: %d tools, notes %v", len(tools), notes)
	}
	if res := call(byName(tools)["echo"], `{"text":"ok"}`); res.Text != "echo: ok" {
		t.Errorf("echo = %+v", res)
	}
	if got := e.calls(t); len(got) != 1 || !strings.HasPrefix(got[0], "echo") {
		t.Errorf("the call log ${CALL_LOG} names = %v", got)
	}

	srv := mcptest.Server(nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("X-Client") != "fsd" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	s = mcpJSONSkill(t, map[string]any{"t": map[string]any{
		"type": "http", "url": ts.URL, "headers": map[string]string{"Authorization": "Bearer ${TRACKER_TOKEN}", "X-Client": "fsd"},
	}})
	if tools, notes := p.Acquire(context.Background(), s); len(tools) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "TRACKER_TOKEN is not set") {
		t.Errorf("without the variable: %d tools, notes %v", len(tools), notes)
	}
	e.vars["TRACKER_TOKEN"] = "s3cret"
	s = mcpJSONSkill(t, map[string]any{"t": map[string]any{
		"type": "http", "url": ts.URL, "headers": map[string]string{"Authorization": "Bearer ${TRACKER_TOKEN}", "X-Client": "fsd"},
	}})
	tools, notes = p.Acquire(context.Background(), s)
	if len(notes) > 0 || len(tools) == 0 {
		t.Fatalf("http: %d tools, notes %v", len(tools), notes)
	}
	untrusted := newPool(t, e, Options{Trusted: func(*spec.Skill) bool { return false }})
	if _, notes := untrusted.Acquire(context.Background(), s); len(notes) != 1 || !strings.Contains(notes[0], "not trusted") {
		t.Errorf("an untrusted skill's .mcp.json headers were sent: notes %v", notes)
	}
}
