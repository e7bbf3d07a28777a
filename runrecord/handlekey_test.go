package runrecord

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// K2: a project's handle key is made once, readable by its owner only,
// and read back the same by every later run; a folder fsd cannot write
// has none, and says so.
func TestHandleKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ProjectFolder)
	k1, err := HandleKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := HandleKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(k1) < keyBytes || !bytes.Equal(k1, k2) {
		t.Fatalf("keys %x and %x; want one key of at least %d bytes", k1, k2, keyBytes)
	}
	st, err := os.Stat(filepath.Join(dir, HandleKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", HandleKeyFile, st.Mode().Perm())
	}
	other, err := HandleKey(filepath.Join(t.TempDir(), ProjectFolder))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(other, k1) {
		t.Error("two projects got one handle key")
	}

	if err := os.WriteFile(filepath.Join(dir, HandleKeyFile), []byte("not hex\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := HandleKey(dir); err == nil {
		t.Error("a damaged key file was read as a key")
	}

	if os.Geteuid() == 0 {
		t.Skip("root writes into a read-only folder")
	}
	ro := t.TempDir()
	if err := os.Chmod(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o700) })
	if k, err := HandleKey(filepath.Join(ro, ProjectFolder)); err == nil {
		t.Errorf("a read-only project got key %x", k)
	}
}

// K7: a project folder made for a handle key ignores itself, so `git add
// .` in the project commits neither the key nor the runs; a .gitignore the
// user wrote there is kept as it is.
func TestProjectFolderIgnoresItself(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	if out, err := exec.Command(git, "-C", repo, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	dir := filepath.Join(repo, ProjectFolder)
	if _, err := HandleKey(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, RunsFolder, "r1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, RunsFolder, "r1", "run.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(git, "-C", repo, "status", "--porcelain", "--untracked-files=all").CombinedOutput()
	if err != nil {
		t.Fatalf("git status: %v: %s", err, out)
	}
	if len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("git would add the project folder's files:\n%s", out)
	}

	own := filepath.Join(t.TempDir(), ProjectFolder)
	if err := os.MkdirAll(own, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(own, ".gitignore"), []byte("runs/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := HandleKey(own); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(own, ".gitignore")); string(b) != "runs/\n" {
		t.Errorf("the user's .gitignore became %q", b)
	}
}
