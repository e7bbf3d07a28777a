package artifact

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReaders feeds arbitrary markdown through Spool and every reader,
// with the fuzzer's string as heading, pattern and language. No input may
// panic a reader or make it answer more than its bound.
func FuzzReaders(f *testing.F) {
	files, _ := filepath.Glob("testdata/corpus/*.md")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b), "Install")
		}
	}
	f.Add("# a\n## a\n# a", "a > a")
	f.Add("---\n---\n", "---")
	f.Add("```\n# x\n", "(a+)+$")
	f.Add("Title\r\n===\r\n\r\n\tcode\r\n", "title")
	f.Fuzz(func(t *testing.T, text, q string) {
		s := NewStore(seeded(1))
		h, err := s.Spool("fuzz", "1.0.0", []byte(text), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		qj, _ := json.Marshal(q)
		sets := map[string][]string{
			"artifact_md_sections":    {`"heading":` + string(qj), `"heading":` + string(qj) + `,"occurrence":2`},
			"artifact_md_code_blocks": {``, `"language":` + string(qj), `"index":1`},
			"artifact_md_text":        {``, `"offset":7,"limit":5`},
			"artifact_md_ast":         {``, `"depth":8`},
			"artifact_head":           {``, `"lines":1000`},
			"artifact_tail":           {``, `"lines":1`},
			"artifact_grep":           {`"pattern":` + string(qj), `"pattern":` + string(qj) + `,"context":10,"ignore_case":true`, `"pattern":"."`},
			"artifact_cat":            {``, `"offset":3,"limit":2`},
		}
		for _, r := range readers {
			variants := sets[r.name]
			if variants == nil {
				variants = []string{``}
			}
			for _, v := range variants {
				args := `{"handle":"` + h + `"`
				if v != "" {
					args += "," + v
				}
				args += "}"
				out, skill, err := s.Call(r.name, json.RawMessage(args), allLoaded)
				if err != nil && strings.HasPrefix(err.Error(), "internal error") {
					t.Fatalf("%s %s: %v", r.name, args, err)
				}
				if skill != "fuzz" {
					t.Fatalf("%s %s: skillID %q", r.name, args, skill)
				}
				if len(out) > MaxOutput+300 {
					t.Fatalf("%s %s: answer of %d bytes exceeds the bound", r.name, args, len(out))
				}
			}
		}
	})
}
