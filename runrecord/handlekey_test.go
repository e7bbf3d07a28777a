package runrecord

import (
	"bytes"
	"os"
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
