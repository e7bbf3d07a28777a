//go:build unix

package spec

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSpecialFilesRefused: a skill or workflow file that is a named pipe
// or a device is refused with one error at the file, without opening it:
// opening a pipe blocks until a writer comes, and a device's Stat size (0)
// bounds nothing (/dev/zero never ends, so reading it ran out of memory).
func TestSpecialFilesRefused(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe.skill.yaml")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	paths := []string{pipe}
	if _, err := os.Stat("/dev/zero"); err == nil {
		zero := filepath.Join(dir, "zero.workflow.yaml")
		if err := os.Symlink("/dev/zero", zero); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, zero)
	}
	for _, p := range paths {
		done := make(chan string, 1)
		go func() { done <- render(ValidatePaths([]string{p}, false), dir) }()
		select {
		case got := <-done:
			want := "$TMP/" + filepath.Base(p) + ":1:1: "
			if strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, want) || !strings.Contains(got, "not a regular file") {
				t.Errorf("%s: got %q, want one error at %s... saying it is not a regular file", filepath.Base(p), got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: validate still reading after 5s", filepath.Base(p))
		}
	}
}

// TestLimitReaderBoundsTheFile: readLimited's reader stops after its
// bound in all, not per Read, so a file that grows after Stat costs at
// most the limit and a byte.
func TestLimitReaderBoundsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "grown.skill.yaml")
	if err := os.WriteFile(path, []byte(strings.Repeat("x", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	if _, err := io.CopyBuffer(&b, &limitReader{f, 10}, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 10 {
		t.Errorf("read %d bytes through a 10-byte limitReader, want 10", b.Len())
	}
}

// TestSymlinkToPipeNotAResource: a SKILL.md folder's named pipe is not a
// resource, and neither is a symlink to it: the symlink under scripts/
// hung validate, which opened it to read its #! line, and a resource
// that is a pipe would hang the run that reads it.
func TestSymlinkToPipeNotAResource(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "piped")
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: piped\ndescription: Has a pipe.\n---\n# Body\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.md"), 0o700); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	for _, link := range []string{"alias.md", filepath.Join("scripts", "go.sh")} {
		if err := os.Symlink(filepath.Join(dir, "pipe.md"), filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan *Skill, 1)
	go func() {
		s, _ := LoadSkill(filepath.Join(dir, "SKILL.md"))
		done <- s
	}()
	select {
	case s := <-done:
		if s == nil || len(s.Resources) != 0 {
			t.Errorf("resources %v, want none", s.Resources)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("LoadSkill still reading after 5s")
	}
}
