package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

// TestCacheOpensAsOpen: a Cache gives back the workspace it opened while
// its folder is the same folder, and what Open would return once it is
// not: a removed folder is made again, a symlink in its path pointed
// elsewhere leads to the new folder, a folder moved away and replaced
// is the new one, never the old path.
func TestCacheOpensAsOpen(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(link, "ws")
	var c Cache
	open := func(what string) *Workspace {
		t.Helper()
		got, err := c.Open(dir)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		want, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got.dir != want.dir || got.real != want.real || len(got.hidden) != 0 {
			t.Fatalf("%s: the cache opened %+v, Open %+v", what, *got, *want)
		}
		return got
	}
	first := open("first")
	if again := open("again"); again != first {
		t.Error("the same folder was opened again instead of kept")
	}
	if err := os.RemoveAll(filepath.Join(a, "ws")); err != nil {
		t.Fatal(err)
	}
	if open("removed"); !isDir(filepath.Join(a, "ws")) {
		t.Error("a removed workspace was not made again")
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(b, link); err != nil {
		t.Fatal(err)
	}
	if ws := open("relinked"); ws.real != filepath.Join(realPath(t, b), "ws") {
		t.Errorf("after the symlink moved, the workspace is %s", ws.real)
	}
	// The folder moved away and another put in its place: the kept
	// workspace's folder is no longer at its path.
	moved := open("before the move")
	if err := os.Rename(filepath.Join(b, "ws"), filepath.Join(a, "ws2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(b, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	if open("replaced") == moved {
		t.Error("a folder put in place of the workspace was taken for it")
	}
	// The folder moved and its symlink followed it: the same folder at
	// the same path, with another real path, where another folder now is.
	c2 := filepath.Join(base, "c")
	if err := os.Mkdir(c2, 0o755); err != nil {
		t.Fatal(err)
	}
	followed := open("before the symlink follows")
	if err := os.Rename(filepath.Join(b, "ws"), filepath.Join(c2, "ws")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(b, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(c2, link); err != nil {
		t.Fatal(err)
	}
	if ws := open("followed"); ws == followed || ws.real != filepath.Join(realPath(t, c2), "ws") {
		t.Errorf("after the folder and its symlink moved, the workspace is %s", ws.real)
	}
	var none *Cache
	if ws, err := none.Open(dir); err != nil || ws.dir != dir {
		t.Errorf("a nil cache opened %v, %v", ws, err)
	}
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCacheSeesFolderBecomeLink (U16): a workspace whose path had no
// symlink, moved away and replaced by a symlink to where it went, is the
// same folder under another real path: the cache opens it anew, as Open
// would, instead of giving the kept one with the old real path.
func TestCacheSeesFolderBecomeLink(t *testing.T) {
	base := t.TempDir()
	dir, moved := filepath.Join(base, "ws"), filepath.Join(base, "old")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var c Cache
	if _, err := c.Open(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, dir); err != nil {
		t.Fatal(err)
	}
	got, err := c.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.real != want.real {
		t.Fatalf("the cache gave real path %s, Open %s", got.real, want.real)
	}
}

// TestCacheOwnsItsKeys checks that a kept workspace's path does not
// share memory with the string it was asked for: a worker asks with a
// piece of a task message, which the cache would otherwise keep alive.
func TestCacheOwnsItsKeys(t *testing.T) {
	dir := t.TempDir()
	msg := dir + strings.Repeat("x", 1<<16)
	asked := msg[:len(dir)]
	var c Cache
	if _, err := c.Open(asked); err != nil {
		t.Fatal(err)
	}
	start := uintptr(unsafe.Pointer(unsafe.StringData(msg)))
	for k, v := range c.kept {
		for _, s := range []string{k, v.ws.dir} {
			if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); p >= start && p < start+uintptr(len(msg)) {
				t.Errorf("kept %q shares the asked string's memory", s)
			}
		}
	}
	if len(c.kept) != 1 {
		t.Errorf("kept %d workspaces; want 1", len(c.kept))
	}
}
