//go:build unix

package workspace

import (
	"os"
	"path/filepath"
	"runtime"
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

// Read keeps at most a line's shown part in memory: a file that is one
// huge line (minified JSON, a log without newlines) costs that, not its
// size — a 1.5 GB line took 3 GB to show the line after it.
func TestReadHugeLineBounded(t *testing.T) {
	f := newFixture(t)
	const size = 48 << 20
	line := strings.Repeat("a", size) + "\nsecond\n"
	if err := os.WriteFile(filepath.Join(f.dir, "huge.txt"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	line = ""
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, isErr := f.call(t, Read, `{"file_path":"huge.txt"}`)
	runtime.ReadMemStats(&after)
	if isErr || !strings.Contains(got, "     1\taaaa") || !strings.Contains(got, "[line cut]") || !strings.Contains(got, "     2\tsecond\n") {
		t.Errorf("Read huge.txt = %.200q", got)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
		t.Errorf("Read of a %d MiB line allocated %d MiB", size>>20, alloc>>20)
	}
}

// A workspace that cannot be one is refused with a message naming it:
// an existing file, and the file system's root, which would make every
// file the workspace's to write.
func TestOpenRefuses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "slash")
	if err := os.Symlink("/", link); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ dir, want string }{
		{file, file + " is not a folder"},
		{filepath.Join(file, "sub"), file + " is not a folder"},
		{"/", "the whole file system"},
		{"/usr/..", "the whole file system"},
		{link, "the whole file system"},
	} {
		_, err := Open(tt.dir)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%s) = %v, want an error with %q", tt.dir, err, tt.want)
		}
	}
}

// Claude Code's globs take {a,b} alternatives (its Grep's example is
// "*.{ts,tsx}"): a model writes them, and "No files match" would be a
// wrong answer.
func TestGlobBraces(t *testing.T) {
	f := newFixture(t)
	runCases(t, f, []toolCase{
		{"Glob", Glob, `{"pattern":"**/*.{go,md}"}`, false, []string{"docs/readme.md", "src/main.go", "src/util/util.go", "deep/a/b/c/leaf.md"}, []string{"notes.txt"}},
		{"Glob folders", Glob, `{"pattern":"{docs,deep}/**/*.md"}`, false, []string{"docs/readme.md", "deep/a/b/c/leaf.md"}, []string{"src/"}},
		{"nested", Glob, `{"pattern":"src/{main,util/{util,x}}.go"}`, false, []string{"src/main.go", "src/util/util.go"}, nil},
		{"Grep glob", Grep, `{"pattern":"beta","glob":"*.{md,txt}"}`, false, []string{"docs/readme.md", "notes.txt"}, []string{"util.go"}},
		{"unclosed is literal", Glob, `{"pattern":"*.{go"}`, false, []string{"No files match"}, nil},
		{"too many", Glob, `{"pattern":"{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}"}`, true, []string{"alternatives"}, nil},
	})
}

// A text file in UTF-16 with its byte-order mark (as Windows tools write
// them) reads and is searched as text, as ripgrep searches it.
func TestUTF16Text(t *testing.T) {
	f := newFixture(t)
	le := []byte{0xff, 0xfe}
	for _, r := range "caf\u00e9 beta\r\nline two\r\n" {
		le = append(le, byte(r), byte(r>>8))
	}
	if err := os.WriteFile(filepath.Join(f.dir, "win16.txt"), le, 0o644); err != nil {
		t.Fatal(err)
	}
	runCases(t, f, []toolCase{
		{"Read", Read, `{"file_path":"win16.txt"}`, false, []string{"     1\tcaf\u00e9 beta\n     2\tline two\n"}, nil},
		{"Grep", Grep, `{"pattern":"caf\u00e9 beta","output_mode":"content"}`, false, []string{"win16.txt:1:caf\u00e9 beta"}, nil},
		{"Edit says why not", Edit, `{"file_path":"win16.txt","old_string":"two","new_string":"2"}`, true, []string{"UTF-16", "iconv"}, nil},
	})
}
