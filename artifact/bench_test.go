package artifact

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// skillDoc builds a SKILL.md-like document of about n bytes: front
// matter, then sections with prose, lists, code, tables and links.
func skillDoc(n int) []byte {
	var sb strings.Builder
	sb.WriteString("---\nname: weekly-report\ndescription: Builds the weekly sales report.\nversion: 1.2.0\n---\n\n# Weekly report\n\n")
	for i := 0; sb.Len() < n; i++ {
		fmt.Fprintf(&sb, "## Step %d\n\nFetch the rows for the ISO week with `fetch_sales`, then check them against the [ledger](https://example.com/ledger/%d).\nRound to whole euros; never invent figures.\n\n", i, i)
		fmt.Fprintf(&sb, "### Details %d\n\n- Check the totals.\n- Compare with last week.\n- Flag rows above **10,000 EUR**.\n\n", i)
		sb.WriteString("```bash\n./scripts/fetch.sh --week 2026-W48 | jq '.rows[]'\n```\n\n")
		sb.WriteString("| week | rows | total |\n|------|-----:|------:|\n| 2026-W47 | 1,180 | 98,200 |\n| 2026-W48 | 1,204 | 101,950 |\n\n")
	}
	return []byte(sb.String())
}

func BenchmarkSpool75KB(b *testing.B) {
	doc := skillDoc(75 << 10)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := NewStore(seeded(1))
		b.StartTimer()
		if _, err := s.Spool("weekly-report", "1.2.0", doc, "", nil); err != nil {
			b.Fatal(err)
		}
	}
}

func benchCall(b *testing.B, tool, extra string) {
	s := NewStore(seeded(1))
	h, err := s.Spool("weekly-report", "1.2.0", skillDoc(75<<10), "", nil)
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(fmt.Sprintf(`{"handle":%q%s}`, h, extra))
	if _, _, err := s.Call(tool, args, allLoaded); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.Call(tool, args, allLoaded); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHeadings(b *testing.B) { benchCall(b, "artifact_md", `,"get":"headings"`) }
func BenchmarkSection(b *testing.B) {
	benchCall(b, "artifact_md", `,"get":"section","heading":"Step 40"`)
}
func BenchmarkGrep(b *testing.B) {
	benchCall(b, "artifact_read", `,"get":"grep","pattern":"Step 4[0-9]","context":1`)
}
func BenchmarkCat(b *testing.B) { benchCall(b, "artifact_read", `,"get":"cat","offset":30000`) }
