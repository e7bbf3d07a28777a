package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The run records inside the workspace (`workspace: .` in the project's
// folder) are out of every built-in tool's reach: Read, Write and Edit
// refuse them by any path, a symlink included, and Glob and Grep skip
// them; a hidden folder that holds the workspace hides nothing.
func TestRecordsInsideWorkspaceHidden(t *testing.T) {
	f := newFixture(t)
	fsd := filepath.Join(f.dir, ".fsd")
	journal := filepath.Join(fsd, "runs", "r1", "journal.jsonl")
	if err := os.MkdirAll(filepath.Dir(journal), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(journal, []byte("beta: not approved\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(journal, filepath.Join(f.dir, "journal-link")); err != nil {
		t.Fatal(err)
	}
	ws, err := Open(f.dir, fsd, filepath.Dir(f.dir))
	if err != nil {
		t.Fatal(err)
	}
	f.ws = ws
	refused := []string{"is inside " + fsd, "the run records"}
	runCases(t, f, []toolCase{
		{"Read", Read, `{"file_path":".fsd/runs/r1/journal.jsonl"}`, true, refused, []string{"not approved"}},
		{"Read absolute", Read, `{"file_path":"$WS/.fsd/runs/r1/journal.jsonl"}`, true, refused, []string{"not approved"}},
		{"Read through a symlink", Read, `{"file_path":"journal-link"}`, true, refused, []string{"not approved"}},
		{"Write", Write, `{"file_path":".fsd/runs/r1/journal.jsonl","content":"forged"}`, true, refused, nil},
		{"Write a new file", Write, `{"file_path":".fsd/runs/r1/approvals.jsonl","content":"forged"}`, true, refused, nil},
		{"Write through a symlink", Write, `{"file_path":"journal-link","content":"forged"}`, true, refused, nil},
		{"Edit", Edit, `{"file_path":"src/../.fsd/runs/r1/journal.jsonl","old_string":"not ","new_string":""}`, true, refused, nil},
		{"Glob skips", Glob, `{"pattern":"**/*.jsonl"}`, false, []string{"No files match"}, nil},
		{"Grep skips", Grep, `{"pattern":"approved"}`, false, []string{"No matches"}, nil},
		{"Grep in it", Grep, `{"pattern":"approved","path":".fsd"}`, true, refused, nil},
		{"the rest is the workspace's", Read, `{"file_path":"notes.txt"}`, false, []string{"alpha"}, nil},
	})
	if b, _ := os.ReadFile(journal); string(b) != "beta: not approved\n" {
		t.Errorf("the journal was changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(journal), "approvals.jsonl")); err == nil {
		t.Error("approvals.jsonl was written")
	}
}

// TestOpenedFileInRecordsRefused (T12): the check that holds is of the
// file a tool opened. A program of the run can swap a folder on a
// path's way for a symlink into the records after the path was checked
// and before it is opened; the open file is checked again, so Read,
// Grep, Edit and Write refuse it then, and Write truncates nothing.
// (The path is given here as the swap leaves it, past the path check.)
func TestOpenedFileInRecordsRefused(t *testing.T) {
	dir := t.TempDir()
	fsd := filepath.Join(dir, ".fsd")
	journal := filepath.Join(fsd, "runs", "r1", "journal.jsonl")
	if err := os.MkdirAll(filepath.Dir(journal), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(journal, []byte("beta: not approved\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".fsd", filepath.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	ws, err := Open(dir, fsd)
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	p := place{root: dir, name: "d/runs/r1/journal.jsonl"}
	if f, err := ws.openRead(root, p.name); err == nil {
		f.Close()
		t.Error("openRead opened the journal through a swapped folder")
	} else if got := ws.explain(p, err).Error(); !strings.Contains(got, "the run records") {
		t.Errorf("openRead's error %q does not say the run records", got)
	}
	for _, name := range []string{p.name, "d/runs/r1/approvals.jsonl"} {
		if err := ws.writeFile(root, name, []byte("forged")); err == nil {
			t.Errorf("writeFile wrote %s through a swapped folder", name)
		}
	}
	if b, _ := os.ReadFile(journal); string(b) != "beta: not approved\n" {
		t.Errorf("the journal was changed: %q", b)
	}
	// Outside the records the same calls work.
	if err := ws.writeFile(root, "notes.txt", []byte("mine")); err != nil {
		t.Fatal(err)
	}
	f, err := ws.openRead(root, "notes.txt")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
