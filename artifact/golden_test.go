package artifact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/internal/golden"
)

// seeded returns a reproducible random source for handles.
func seeded(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	s[0] = byte(seed)
	return rand.NewChaCha8(s)
}

func allLoaded(string) bool { return true }

type call struct {
	tool string
	args string // JSON without the handle; the test adds it
}

// commonCalls runs every reader once with its defaults.
var commonCalls = []call{
	{"artifact_md", `{"get": "headings"}`},
	{"artifact_md", `{"get": "frontmatter"}`},
	{"artifact_md", `{"get": "code"}`},
	{"artifact_md", `{"get": "links"}`},
	{"artifact_md", `{"get": "images"}`},
	{"artifact_md", `{"get": "text"}`},
	{"artifact_md", `{"get": "ast", "depth": 2}`},
	{"artifact_read", `{"get": "head", "lines": 5}`},
	{"artifact_read", `{"get": "tail", "lines": 3}`},
	{"artifact_read", `{"get": "cat", "offset": 0, "limit": 64}`},
	{"artifact_read", `{"get": "size"}`},
}

// extraCalls exercise what each corpus file is there for.
var extraCalls = map[string][]call{
	"atx_setext.md": {
		{"artifact_md", `{"get": "section", "heading": "Setup"}`},
		{"artifact_md", `{"get": "section", "heading": "Install"}`},
		{"artifact_md", `{"get": "section", "heading": "Usage > Install"}`},
		{"artifact_md", `{"get": "section", "heading": "notes", "occurrence": 2}`},
		{"artifact_md", `{"get": "section", "heading": "Setup > Configure > Notes"}`},
		{"artifact_md", `{"get": "section", "heading": "Missing"}`},
		{"artifact_md", `{"get": "section", "heading": "Notes", "occurrence": 3}`},
		{"artifact_md", `{"get": "section", "heading": "## Level five"}`},
		{"artifact_read", `{"get": "grep", "pattern": "notes", "ignore_case": true, "context": 1}`},
		{"artifact_read", `{"get": "grep", "pattern": "^#{7}"}`},
	},
	"code_headings.md": {
		{"artifact_md", `{"get": "code", "language": "PYTHON"}`},
		{"artifact_md", `{"get": "code", "language": "rust"}`},
		{"artifact_md", `{"get": "code", "index": 4}`},
		{"artifact_md", `{"get": "section", "heading": "Code"}`},
		{"artifact_read", `{"get": "grep", "pattern": "not a heading"}`},
	},
	"frontmatter.md": {
		{"artifact_md", `{"get": "section", "heading": "Setext after front matter"}`},
		{"artifact_read", `{"get": "grep", "pattern": "version"}`},
	},
	"tables.md": {
		{"artifact_md", `{"get": "ast", "depth": 4}`},
		{"artifact_read", `{"get": "grep", "pattern": "\\|", "context": 2}`},
	},
	"links_images.md": {
		{"artifact_md", `{"get": "ast", "depth": 3}`},
	},
	"html.md": {
		{"artifact_md", `{"get": "section", "heading": "After HTML"}`},
		{"artifact_md", `{"get": "text", "offset": 10, "limit": 30}`},
	},
	"crlf.md": {
		{"artifact_md", `{"get": "section", "heading": "Second"}`},
		{"artifact_md", `{"get": "section", "heading": "Setext too"}`},
		{"artifact_read", `{"get": "grep", "pattern": "line$"}`},
		{"artifact_read", `{"get": "head"}`},
	},
	"unicode.md": {
		{"artifact_md", `{"get": "section", "heading": "données"}`},
		{"artifact_md", `{"get": "section", "heading": "数据 > 表"}`},
		{"artifact_read", `{"get": "grep", "pattern": "\\p{Han}+"}`},
		{"artifact_read", `{"get": "cat", "offset": 3, "limit": 5}`},
	},
	"empty.md": {
		{"artifact_md", `{"get": "section", "heading": "Anything"}`},
		{"artifact_read", `{"get": "grep", "pattern": "x"}`},
		{"artifact_read", `{"get": "cat", "offset": 1}`},
	},
	"skill.md": {
		{"artifact_md", `{"get": "section", "heading": "Steps"}`},
		{"artifact_read", `{"get": "grep", "pattern": "fetch_sales|euros"}`},
		{"artifact_md", `{"get": "code", "language": "json"}`},
	},
}

// runCalls spools body and renders every call's answer as the golden
// text: a header per call, then the answer or the error.
func runCalls(t *testing.T, sf surface, body []byte, calls []call) string {
	t.Helper()
	s := NewStore(seeded(1))
	h, err := s.Spool("corpus", "1.0.0", body, "", nil)
	if err != nil {
		t.Fatalf("Spool: %v", err)
	}
	var out strings.Builder
	for _, c := range calls {
		args := withHandle(t, c.args, h)
		text, skill, err := sf.call(s, c.tool, args, allLoaded)
		if skill != "corpus" {
			t.Errorf("%s %s: skillID = %q, want corpus", c.tool, c.args, skill)
		}
		fmt.Fprintf(&out, "=== %s %s\n", c.tool, c.args)
		if err != nil {
			fmt.Fprintf(&out, "ERROR: %v\n", err)
			continue
		}
		out.WriteString(text)
		if !strings.HasSuffix(text, "\n") {
			out.WriteString("\n")
		}
	}
	return out.String()
}

func withHandle(t testing.TB, args, handle string) json.RawMessage {
	t.Helper()
	m := map[string]any{}
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		t.Fatalf("bad test args %s: %v", args, err)
	}
	m["handle"] = handle
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadersGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/corpus/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			forSurfaces(t, func(t *testing.T, sf surface) {
				got := runCalls(t, sf, body, append(append([]call(nil), commonCalls...), extraCalls[name]...))
				golden.CheckString(t, filepath.Join("testdata", "golden", strings.TrimSuffix(name, ".md")+".golden"), got)
			})
		})
	}
}

// CRLF files must read like LF files: no reader but artifact_read get=cat shows a
// "\r", and the line-based answers equal those of the LF twin.
func TestCRLFReadsLikeLF(t *testing.T) {
	forSurfaces(t, testCRLFReadsLikeLF)
}

func testCRLFReadsLikeLF(t *testing.T, sf surface) {
	crlf, err := os.ReadFile("testdata/corpus/crlf.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(crlf, []byte("\r\n")) {
		t.Fatal("testdata/corpus/crlf.md lost its CRLF line endings (check .gitattributes)")
	}
	lf := bytes.ReplaceAll(crlf, []byte("\r\n"), []byte("\n"))
	calls := []call{
		{"artifact_md", `{"get": "headings"}`},
		{"artifact_md", `{"get": "section", "heading": "Second"}`},
		{"artifact_md", `{"get": "code"}`},
		{"artifact_md", `{"get": "text"}`},
		{"artifact_read", `{"get": "head"}`},
		{"artifact_read", `{"get": "tail", "lines": 2}`},
		{"artifact_read", `{"get": "grep", "pattern": "^Line .*\\.$", "context": 1}`},
	}
	got, want := runCalls(t, sf, crlf, calls), runCalls(t, sf, lf, calls)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CRLF answers differ from LF (-lf +crlf):\n%s", diff)
	}
	// size counts the carriage returns as bytes, never as lines.
	lines := regexp.MustCompile(`, \d+ lines,`)
	size := []call{{"artifact_read", `{"get": "size"}`}}
	if c, l := lines.FindString(runCalls(t, sf, crlf, size)), lines.FindString(runCalls(t, sf, lf, size)); c == "" || c != l {
		t.Errorf("size of the CRLF file says %q, of the LF file %q", c, l)
	}
	if strings.Contains(got, "\r") {
		t.Errorf("a reader answer carries a carriage return:\n%q", got)
	}
}
