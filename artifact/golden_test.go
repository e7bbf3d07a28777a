package artifact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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
	{"artifact_md_headings", `{}`},
	{"artifact_md_frontmatter", `{}`},
	{"artifact_md_code_blocks", `{}`},
	{"artifact_md_links", `{}`},
	{"artifact_md_images", `{}`},
	{"artifact_md_text", `{}`},
	{"artifact_md_ast", `{"depth": 2}`},
	{"artifact_head", `{"lines": 5}`},
	{"artifact_tail", `{"lines": 3}`},
	{"artifact_cat", `{"offset": 0, "limit": 64}`},
	{"artifact_byte_length", `{}`},
	{"artifact_line_count", `{}`},
	{"artifact_estimate_tokens", `{}`},
}

// extraCalls exercise what each corpus file is there for.
var extraCalls = map[string][]call{
	"atx_setext.md": {
		{"artifact_md_sections", `{"heading": "Setup"}`},
		{"artifact_md_sections", `{"heading": "Install"}`},
		{"artifact_md_sections", `{"heading": "Usage > Install"}`},
		{"artifact_md_sections", `{"heading": "notes", "occurrence": 2}`},
		{"artifact_md_sections", `{"heading": "Setup > Configure > Notes"}`},
		{"artifact_md_sections", `{"heading": "Missing"}`},
		{"artifact_md_sections", `{"heading": "Notes", "occurrence": 3}`},
		{"artifact_md_sections", `{"heading": "## Level five"}`},
		{"artifact_grep", `{"pattern": "notes", "ignore_case": true, "context": 1}`},
		{"artifact_grep", `{"pattern": "^#{7}"}`},
	},
	"code_headings.md": {
		{"artifact_md_code_blocks", `{"language": "PYTHON"}`},
		{"artifact_md_code_blocks", `{"language": "rust"}`},
		{"artifact_md_code_blocks", `{"index": 4}`},
		{"artifact_md_sections", `{"heading": "Code"}`},
		{"artifact_grep", `{"pattern": "not a heading"}`},
	},
	"frontmatter.md": {
		{"artifact_md_sections", `{"heading": "Setext after front matter"}`},
		{"artifact_grep", `{"pattern": "version"}`},
	},
	"tables.md": {
		{"artifact_md_ast", `{"depth": 4}`},
		{"artifact_grep", `{"pattern": "\\|", "context": 2}`},
	},
	"links_images.md": {
		{"artifact_md_ast", `{"depth": 3}`},
	},
	"html.md": {
		{"artifact_md_sections", `{"heading": "After HTML"}`},
		{"artifact_md_text", `{"offset": 10, "limit": 30}`},
	},
	"crlf.md": {
		{"artifact_md_sections", `{"heading": "Second"}`},
		{"artifact_md_sections", `{"heading": "Setext too"}`},
		{"artifact_grep", `{"pattern": "line$"}`},
		{"artifact_head", `{}`},
	},
	"unicode.md": {
		{"artifact_md_sections", `{"heading": "données"}`},
		{"artifact_md_sections", `{"heading": "数据 > 表"}`},
		{"artifact_grep", `{"pattern": "\\p{Han}+"}`},
		{"artifact_cat", `{"offset": 3, "limit": 5}`},
	},
	"empty.md": {
		{"artifact_md_sections", `{"heading": "Anything"}`},
		{"artifact_grep", `{"pattern": "x"}`},
		{"artifact_cat", `{"offset": 1}`},
	},
	"skill.md": {
		{"artifact_md_sections", `{"heading": "Steps"}`},
		{"artifact_grep", `{"pattern": "fetch_sales|euros"}`},
		{"artifact_md_code_blocks", `{"language": "json"}`},
	},
}

// runCalls spools body and renders every call's answer as the golden
// text: a header per call, then the answer or the error.
func runCalls(t *testing.T, body []byte, calls []call) string {
	t.Helper()
	s := NewStore(seeded(1))
	h, err := s.Spool("corpus", "1.0.0", body, "", nil)
	if err != nil {
		t.Fatalf("Spool: %v", err)
	}
	var out strings.Builder
	for _, c := range calls {
		args := withHandle(t, c.args, h)
		text, skill, err := s.Call(c.tool, args, allLoaded)
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
			got := runCalls(t, body, append(append([]call(nil), commonCalls...), extraCalls[name]...))
			golden.CheckString(t, filepath.Join("testdata", "golden", strings.TrimSuffix(name, ".md")+".golden"), got)
		})
	}
}

// CRLF files must read like LF files: no reader but artifact_cat shows a
// "\r", and the line-based answers equal those of the LF twin.
func TestCRLFReadsLikeLF(t *testing.T) {
	crlf, err := os.ReadFile("testdata/corpus/crlf.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(crlf, []byte("\r\n")) {
		t.Fatal("testdata/corpus/crlf.md lost its CRLF line endings (check .gitattributes)")
	}
	lf := bytes.ReplaceAll(crlf, []byte("\r\n"), []byte("\n"))
	calls := []call{
		{"artifact_md_headings", `{}`},
		{"artifact_md_sections", `{"heading": "Second"}`},
		{"artifact_md_code_blocks", `{}`},
		{"artifact_md_text", `{}`},
		{"artifact_head", `{}`},
		{"artifact_tail", `{"lines": 2}`},
		{"artifact_grep", `{"pattern": "^Line .*\\.$", "context": 1}`},
		{"artifact_line_count", `{}`},
	}
	got, want := runCalls(t, crlf, calls), runCalls(t, lf, calls)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CRLF answers differ from LF (-lf +crlf):\n%s", diff)
	}
	if strings.Contains(got, "\r") {
		t.Errorf("a reader answer carries a carriage return:\n%q", got)
	}
}
