package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --workspace that cannot be a workspace (a file, a folder under a
// file, the whole file system) is bad usage: exit 2, one line on stderr,
// and no run record left behind.
func TestBadWorkspaceFlagIsUsage(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	write(t, file, "x")
	write(t, filepath.Join(dir, "w.script.yaml"), "host:\n  - say: done\n")
	wf := filepath.Join(dir, "w.workflow.yaml")
	write(t, wf, "name: w\nmodel: scripted\nscript: w.script.yaml\nhost: {prompt: hi}\ninput: go\n")
	for name, ws := range map[string]string{"file": file, "under a file": filepath.Join(file, "sub"), "root": "/"} {
		t.Run(name, func(t *testing.T) {
			runs := filepath.Join(dir, "runs-"+strings.ReplaceAll(name, " ", "-"))
			code, out, errs := fsd(t, "run", wf, "--runs-dir", runs, "--workspace", ws)
			if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "--workspace") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d and one line naming --workspace", code, out, errs, exitUsage)
			}
			if entries, _ := os.ReadDir(runs); len(entries) != 0 {
				t.Errorf("%d run records left behind", len(entries))
			}
		})
	}
}
