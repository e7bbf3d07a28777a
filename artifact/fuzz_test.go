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
			"section": {`"heading":` + string(qj), `"heading":` + string(qj) + `,"occurrence":2`},
			"code":    {``, `"language":` + string(qj), `"index":1`},
			"text":    {``, `"offset":7,"limit":5`},
			"ast":     {``, `"depth":8`},
			"head":    {``, `"lines":1000`},
			"tail":    {``, `"lines":1`},
			"grep":    {`"pattern":` + string(qj), `"pattern":` + string(qj) + `,"context":10,"ignore_case":true`, `"pattern":"."`},
			"cat":     {``, `"offset":3,"limit":2`},
		}
		for _, o := range ops {
			if o.tool == "" {
				continue // a part of a compact get, which callNamed calls
			}
			variants := sets[o.get]
			if variants == nil {
				variants = []string{``}
			}
			for _, v := range variants {
				args := `{"get":"` + o.get + `","handle":"` + h + `"`
				if v != "" {
					args += "," + v
				}
				args += "}"
				for _, sf := range surfaces {
					out, skill, err := sf.call(s, o.tool, json.RawMessage(args), allLoaded)
					if err != nil && strings.HasPrefix(err.Error(), "internal error") {
						t.Fatalf("%s %s: %v", o.tool, args, err)
					}
					if skill != "fuzz" {
						t.Fatalf("%s %s: skillID %q", o.tool, args, skill)
					}
					if len(out) > MaxOutput+300 {
						t.Fatalf("%s %s: answer of %d bytes exceeds the bound", o.tool, args, len(out))
					}
				}
			}
		}
	})
}
