package mcptest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The npm packages the interoperability tests run, pinned: the reference
// server that exercises every MCP feature, and the official TypeScript
// SDK whose client drives fsd mcp serve.
const (
	EverythingPackage = "@modelcontextprotocol/server-everything@2026.8.31"
	TypeScriptSDK     = "@modelcontextprotocol/sdk@1.32.2"
)

// NPM installs packages (name@version) once into a folder of the user's
// cache, shared by every test binary and run, and returns that folder
// (its node_modules holds them). Where npm is absent or cannot install
// them the test is skipped with the reason — except under CI=true, where
// it fails: CI installs node and npm (.ci/run) and must run these tests.
func NPM(t testing.TB, packages ...string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(strings.Join(packages, "\n")))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "fsd-test", "npm", hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err == nil {
		return dir
	}
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		unavailable("npm is not installed, so the test cannot install %s (apt-get install nodejs npm)", strings.Join(packages, " "))
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	// Installed beside the cache entry and renamed into place, so a
	// concurrent test binary never sees half an install: the first rename
	// wins and the others use it.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"private":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(npm, append([]string{"install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", tmp}, packages...)...)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		unavailable("npm install %s: %v\n%s", strings.Join(packages, " "), err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "node_modules")); statErr != nil {
			t.Fatalf("npm install: %v", err)
		}
	}
	return dir
}

// Node is the path of node, or skips the test (fails it under CI=true)
// where it is not installed.
func Node(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed (apt-get install nodejs npm)")
		}
		t.Skip("node is not installed, so the MCP interoperability test cannot run (apt-get install nodejs npm)")
	}
	return node
}

// Everything is the argv of the reference server
// @modelcontextprotocol/server-everything over stdio, installed by NPM.
func Everything(t testing.TB) []string {
	t.Helper()
	node := Node(t)
	dir := NPM(t, EverythingPackage)
	return []string{node, filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio"}
}

// Script returns where to run a node script of a test (a testdata file)
// so that it imports packages, installed by NPM: a copy in a temporary
// folder beside a link to their node_modules.
func Script(t testing.TB, script string, packages ...string) string {
	t.Helper()
	dir := NPM(t, packages...)
	tmp := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(tmp, "node_modules")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, filepath.Base(script))
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}
