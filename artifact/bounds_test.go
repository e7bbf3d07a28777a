package artifact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var readOn = regexp.MustCompile(`\n?\[(?:bytes|section cut|lines)[^\]]*offset=(\d+)\]\n?$`)

// followCat pages through an artifact with tool's get (artifact_read
// cat, artifact_md text), following each answer's note, and returns what
// it read.
func followCat(t *testing.T, sf surface, s *Store, tool, get, h string, off int) string {
	t.Helper()
	var got strings.Builder
	for range 100 {
		text, _, err := sf.call(s, tool, json.RawMessage(fmt.Sprintf(`{"get":%q,"handle":%q,"offset":%d}`, get, h, off)), allLoaded)
		if err != nil {
			t.Fatal(err)
		}
		if len(text) > MaxOutput+100 {
			t.Fatalf("%s answered %d bytes", tool, len(text))
		}
		m := readOn.FindStringSubmatchIndex(text)
		if m == nil {
			got.WriteString(text)
			return got.String()
		}
		got.WriteString(text[:m[0]])
		off, _ = strconv.Atoi(text[m[2]:m[3]])
	}
	t.Fatal("paging did not end")
	return ""
}

// Cut answers say where to read on, and reading on loses nothing.
func TestReadOnNotes(t *testing.T) { forSurfaces(t, testReadOnNotes) }

func testReadOnNotes(t *testing.T, sf surface) {
	callText := func(_ testing.TB, s *Store, tool, args string) (string, error) {
		text, _, err := sf.call(s, tool, json.RawMessage(args), allLoaded)
		return text, err
	}
	for _, eol := range []string{"\n", "\r\n"} {
		t.Run(strconv.Quote(eol), func(t *testing.T) {
			doc := bytes.ReplaceAll(skillDoc(75<<10), []byte("\n"), []byte(eol))
			s := NewStore(seeded(1))
			h := mustSpool(t, s, "big", "1.0.0", string(doc), "", nil)

			if got := followCat(t, sf, s, ToolRead, "cat", h, 0); got != string(doc) {
				t.Errorf("paging with artifact_read get=cat read %d bytes, want the %d of the body", len(got), len(doc))
			}
			e := s.byHandle[h]
			if got, want := followCat(t, sf, s, ToolMD, "text", h, 0), e.body.plainText(); got != want {
				t.Errorf("paging with artifact_md get=text read %d bytes, want %d", len(got), len(want))
			}

			// The top section is the whole document: it is cut, and the
			// note's offset is where the cut text ends in the body.
			sec, err := callText(t, s, "artifact_md", fmt.Sprintf(`{"get":"section","handle":%q,"heading":"Weekly report"}`, h))
			if err != nil {
				t.Fatal(err)
			}
			m := readOn.FindStringSubmatchIndex(sec)
			if m == nil {
				t.Fatalf("a 75 KB section has no read-on note: …%s", sec[max(len(sec)-200, 0):])
			}
			off, _ := strconv.Atoi(sec[m[2]:m[3]])
			shown := sec[strings.IndexByte(sec, '\n')+1 : m[0]]
			start := bytes.Index(doc, []byte("# Weekly report"))
			want := strings.ReplaceAll(string(doc[start:off]), "\r\n", "\n")
			if shown+"\n" != want && shown != want {
				t.Errorf("section text does not end at the note's offset %d", off)
			}

			head, _ := callText(t, s, "artifact_read", fmt.Sprintf(`{"get":"head","handle":%q,"lines":1000}`, h))
			tail, _ := callText(t, s, "artifact_read", fmt.Sprintf(`{"get":"tail","handle":%q,"lines":1000}`, h))
			for name, text := range map[string]string{"head": head, "tail": tail} {
				if len(text) > MaxOutput+100 || !strings.Contains(text, "[lines ") {
					t.Errorf("%s of 1000 lines: %d bytes, note present: %v", name, len(text), strings.Contains(text, "[lines "))
				}
			}
			grep, _ := callText(t, s, "artifact_read", fmt.Sprintf(`{"get":"grep","handle":%q,"pattern":"Step","context":3}`, h))
			if !strings.Contains(grep, "narrow the pattern") || len(grep) > MaxOutput+100 {
				t.Errorf("grep with many matches: %d bytes, note present: %v", len(grep), strings.Contains(grep, "narrow the pattern"))
			}
		})
	}
}
