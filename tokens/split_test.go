package tokens

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// The o200k pattern in Go's regexp syntax, for checking the hand-written
// splitter: \s is spelled out as Unicode White_Space (Go's is ASCII), and
// \s+(?!\S), which Go cannot say, is done by hand in regexpPieces.
const (
	ws      = `\t\n\v\f\r \x{85}\p{Z}`
	prefix  = `[^\r\n\p{L}\p{N}]?`
	upper   = `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`
	lower   = `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`
	suffix  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
	pattern = prefix + upper + `*` + lower + `+` + suffix +
		`|` + prefix + upper + `+` + lower + `*` + suffix +
		`|\p{N}{1,3}` +
		`| ?[^` + ws + `\p{L}\p{N}]+[\r\n/]*` +
		`|[` + ws + `]*[\r\n]+` +
		`|[` + ws + `]+`
)

var splitRE = regexp.MustCompile(pattern)

// regexpPieces splits with Go's regexp, which picks among alternatives as
// a backtracking engine does (leftmost-first); a run of spaces without a
// line break that a non-space follows gives its last space to the next
// piece, which is what \s+(?!\S) does.
func regexpPieces(s string) []string {
	var out []string
	for pos := 0; pos < len(s); {
		loc := splitRE.FindStringIndex(s[pos:])
		if loc == nil || loc[0] != 0 {
			panic("no piece at " + s[pos:])
		}
		m := s[pos : pos+loc[1]]
		if pos+len(m) < len(s) && strings.TrimSpace(m) == "" && !strings.ContainsAny(m, "\r\n") {
			if _, n := utf8.DecodeLastRuneInString(m); n < len(m) {
				m = m[:len(m)-n]
			}
		}
		out = append(out, m)
		pos += len(m)
	}
	return out
}

func handPieces(s string) []string {
	var out []string
	pieces(s, func(p string) { out = append(out, p) })
	return out
}

func TestPieces(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"hello  world", []string{"hello", " ", " world"}},
		{"  1", []string{" ", " ", "1"}},
		{"a   \n  b", []string{"a", "   \n", " ", " b"}},
		{"I'm DON'T x'ſ", []string{"I'm", " DON'T", " x'ſ"}},
		{"12345", []string{"123", "45"}},
		{"\u0301AB", []string{"\u0301", "AB"}},
		{"HelloWORLDFoo", []string{"Hello", "WORLDFoo"}},
		{" !!/\n\nx", []string{" !!/\n\n", "x"}},
		{"x  ", []string{"x", "  "}},
	} {
		if got := handPieces(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("pieces(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := regexpPieces(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("regexp pieces(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The hand-written splitter cuts exactly where the pattern does.
func FuzzPieces(f *testing.F) {
	for _, s := range []string{"hello  world", "  1", "\u0301AB x'S", "日本語 text\r\n\r\n", " \u00a0\u3000x", "a/b\n/", "٣٤٥٦ Ⅻ½"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = validUTF8(s)
		if got, want := handPieces(s), regexpPieces(s); !slices.Equal(got, want) {
			t.Errorf("pieces(%q) = %q, the pattern says %q", s, got, want)
		}
	})
}

// The reference texts split the same both ways.
func TestPiecesMatchThePattern(t *testing.T) {
	for i, c := range referenceCases(t) {
		if got, want := handPieces(c.Text), regexpPieces(c.Text); !slices.Equal(got, want) {
			t.Errorf("case %d: pieces(%.60q) = %q, the pattern says %q", i, c.Text, got, want)
		}
	}
}

func BenchmarkPiecesRegexp(b *testing.B) {
	doc := strings.Repeat("## Step\n\nFetch the rows for the ISO week, then summarise them in a table.\n\n", 1000)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		regexpPieces(doc)
	}
}
