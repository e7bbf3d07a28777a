package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Builds of one name of one package go to one path (where go build finds
// the last binary to keep); another name, or another package's folder,
// has a path of its own; changed flags build it again.
func TestBuildKeepsOnePathPerFolderAndName(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	must(t, err)
	dir := t.TempDir()
	t.Setenv("GOCACHE", strings.TrimSpace(string(gocache)))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	for _, d := range []string{"a", "b"} {
		src := filepath.Join(dir, d)
		must(t, os.MkdirAll(src, 0o755))
		must(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module hello\n\ngo 1.22\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nvar word = \"hi\"\n\nfunc main() { println(word) }\n"), 0o644))
	}
	a := filepath.Join(dir, "a")
	bin, err := Build(a, "hello", nil)
	must(t, err)
	if !strings.HasPrefix(bin, filepath.Join(dir, "cache")+string(filepath.Separator)) {
		t.Errorf("built at %s, outside the user's cache", bin)
	}
	again, err := Build(a, "hello", nil, "-ldflags", "-X main.word=stamped")
	must(t, err)
	other, err := Build(a, "other", nil)
	must(t, err)
	if again != bin || other == bin {
		t.Errorf("paths: %s, again %s, another name %s", bin, again, other)
	}
	if out, err := exec.Command(bin).CombinedOutput(); err != nil || !strings.Contains(string(out), "stamped") {
		t.Errorf("built again with new flags, it printed %q, %v", out, err)
	}
	if elsewhere, err := Build(filepath.Join(dir, "b"), "hello", nil); err != nil || elsewhere == bin {
		t.Errorf("another folder's build at %s (%v), the first's at %s", elsewhere, err, bin)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A launcher on PATH (it prints another folder's interpreter as
// sys.executable) gets that folder put before it; an interpreter that
// is itself leaves PATH alone.
func TestPythonFirst(t *testing.T) {
	dir := t.TempDir()
	shim, real := filepath.Join(dir, "shims"), filepath.Join(dir, "versions", "3", "bin")
	for _, d := range []string{shim, real} {
		must(t, os.MkdirAll(d, 0o755))
	}
	script := func(path, prints string) {
		must(t, os.WriteFile(path, []byte("#!/bin/sh\necho "+prints+"\n"), 0o755))
	}
	script(filepath.Join(shim, "python3"), filepath.Join(real, "python3"))
	script(filepath.Join(real, "python3"), filepath.Join(real, "python3"))
	t.Setenv("PATH", shim+string(os.PathListSeparator)+"/usr/bin:/bin")
	pythonFirst()
	if got, want := os.Getenv("PATH"), real+string(os.PathListSeparator)+shim+string(os.PathListSeparator)+"/usr/bin:/bin"; got != want {
		t.Errorf("PATH with a launcher first: %s, want %s", got, want)
	}
	t.Setenv("PATH", real+string(os.PathListSeparator)+"/usr/bin:/bin")
	pythonFirst()
	if got, want := os.Getenv("PATH"), real+string(os.PathListSeparator)+"/usr/bin:/bin"; got != want {
		t.Errorf("PATH with the interpreter first: %s, want it unchanged (%s)", got, want)
	}
	// A folder ahead of the launcher's (the go command's, which go test
	// puts first) stays ahead of the interpreter's.
	tools := filepath.Join(dir, "go", "bin")
	must(t, os.MkdirAll(tools, 0o755))
	t.Setenv("PATH", strings.Join([]string{tools, shim, "/usr/bin", "/bin"}, string(os.PathListSeparator)))
	pythonFirst()
	if got, want := os.Getenv("PATH"), strings.Join([]string{tools, real, shim, "/usr/bin", "/bin"}, string(os.PathListSeparator)); got != want {
		t.Errorf("PATH with a folder before the launcher: %s, want %s", got, want)
	}
}
