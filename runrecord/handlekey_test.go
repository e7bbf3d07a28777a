package runrecord

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	if k, err := HandleKey(filepath.Join(ro, ProjectFolder)); !errors.Is(err, ErrNoHandleKey) {
		t.Errorf("a read-only project: key %x, error %v; want ErrNoHandleKey", k, err)
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

// K2: a key file fsd cannot use is an error that says how to mend it, and
// not ErrNoHandleKey, which only a folder that takes no key gives; a key
// file others may read is used, with ErrHandleKeyOpen.
func TestHandleKeyDamaged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ProjectFolder)
	good, err := HandleKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, HandleKeyFile)
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		make func() error
	}{
		{"empty", func() error { return os.WriteFile(path, nil, 0o600) }},
		{"cut", func() error { return os.WriteFile(path, text[:20], 0o600) }},
		{"a folder", func() error { return os.Mkdir(path, 0o700) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
			if err := tc.make(); err != nil {
				t.Fatal(err)
			}
			k, err := HandleKey(dir)
			if err == nil || k != nil {
				t.Fatalf("HandleKey = %x, %v; want an error", k, err)
			}
			if errors.Is(err, ErrNoHandleKey) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "remove it") {
				t.Errorf("error %q: want one naming %s and how to mend it, not ErrNoHandleKey", err, path)
			}
		})
	}

	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := HandleKey(dir)
	if !errors.Is(err, ErrHandleKeyOpen) || !bytes.Equal(k, good) || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a key others may read: HandleKey = %x, %v; want the key and ErrHandleKeyOpen saying chmod 600", k, err)
	}

	file := filepath.Join(t.TempDir(), ProjectFolder)
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := HandleKey(file); err == nil || errors.Is(err, ErrNoHandleKey) {
		t.Errorf("a project folder that is a file: %v; want an error other than ErrNoHandleKey", err)
	}
}
