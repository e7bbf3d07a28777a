//go:build unix

package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A FIFO in the workspace (a script's mkfifo) is no file the tools read
// or write: opening it would wait for a writer forever. Broken, this test
// hangs until go test's timeout.
func TestFIFONeverBlocks(t *testing.T) {
	f := newFixture(t)
	if err := syscall.Mkfifo(filepath.Join(f.dir, "pipe"), 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	runCases(t, f, []toolCase{
		{"Read", Read, `{"file_path":"pipe"}`, true, []string{"pipe: is not a regular file"}, nil},
		{"Write", Write, `{"file_path":"pipe","content":"x"}`, true, []string{"pipe: is not a regular file"}, nil},
		{"Edit", Edit, `{"file_path":"pipe","old_string":"a","new_string":"b"}`, true, []string{"pipe: is not a regular file"}, nil},
		{"Grep walks past it", Grep, `{"pattern":"gamma"}`, false, []string{"notes.txt"}, nil},
		{"Grep names it", Grep, `{"pattern":"gamma","path":"pipe"}`, false, []string{"No matches"}, nil},
	})
}

// A file Grep does not search for its size is named, so "No matches"
// does not tell the model the text is nowhere.
func TestGrepNamesTooLargeFiles(t *testing.T) {
	f := newFixture(t)
	big := strings.Repeat("needle in a haystack\n", MaxGrepFileBytes/20)
	if err := os.WriteFile(filepath.Join(f.dir, "big.log"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	runCases(t, f, []toolCase{
		{"folder", Grep, `{"pattern":"needle"}`, false, []string{"No matches", "big.log", "over 10 MiB"}, nil},
		{"the file", Grep, `{"pattern":"needle","path":"big.log"}`, false, []string{"big.log", "over 10 MiB"}, nil},
		{"filtered out by glob", Grep, `{"pattern":"needle","glob":"*.md"}`, false, []string{"No matches"}, []string{"big.log"}},
	})
}

// Read shows a CRLF file's lines without their \r, so the text the model
// copies into old_string has bare \n: Edit must find it, and keep the
// file's line ends.
func TestEditCRLF(t *testing.T) {
	f := newFixture(t)
	p := filepath.Join(f.dir, "win.txt")
	if err := os.WriteFile(p, []byte("one\r\ntwo\r\nthree\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runCases(t, f, []toolCase{
		{"Read hides \\r", Read, `{"file_path":"win.txt"}`, false, []string{"     1\tone\n     2\ttwo\n"}, []string{"\r"}},
		{"Edit across lines", Edit, `{"file_path":"win.txt","old_string":"one\ntwo","new_string":"1\n2\n2.5"}`, false, []string{"1 replacement"}, nil},
	})
	if b, _ := os.ReadFile(p); string(b) != "1\r\n2\r\n2.5\r\nthree\r\n" {
		t.Errorf("win.txt = %q", b)
	}
}
