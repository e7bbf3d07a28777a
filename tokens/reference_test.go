package tokens

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// Counts agree with tiktoken's own (testdata/reference.json, made by
// testdata/reference.cjs with OpenAI's Rust tiktoken built to WebAssembly)
// on hand-picked edge cases (whitespace before words and digits, line
// breaks, contractions, titlecase, marks, many scripts, code, long
// single pieces) and 400 seeded random mixes of them.
func TestCountMatchesTiktoken(t *testing.T) {
	for i, c := range referenceCases(t) {
		if got := Count(c.Text); got != c.Count {
			t.Errorf("case %d: Count(%.60q) = %d, tiktoken says %d", i, c.Text, got, c.Count)
		}
	}
}

type referenceCase struct {
	Text  string `json:"text"`
	Count int    `json:"count"`
}

func referenceCases(t *testing.T) []referenceCase {
	b, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []referenceCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 450 {
		t.Fatalf("%d reference cases", len(cases))
	}
	return cases
}

// The embedded table is OpenAI's o200k_base.tiktoken, byte for byte: the
// file rebuilt from it has the SHA-256 OpenAI publishes, and every token
// is found at its own rank.
func TestVocabularyIsOpenAIs(t *testing.T) {
	v := newVocab(o200kBase)
	h := sha256.New()
	var line []byte
	for r := range v.n {
		tok := v.token(r)
		line = base64.StdEncoding.AppendEncode(line[:0], []byte(tok))
		line = append(line, ' ')
		line = strconv.AppendInt(line, int64(r), 10)
		line = append(line, '\n')
		h.Write(line)
		if got := v.rank(tok); got != r {
			t.Fatalf("token %q: rank %d, want %d", tok, got, r)
		}
	}
	const want = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
	if got := hex.EncodeToString(h.Sum(nil)); got != want || v.n != 199998 {
		t.Errorf("%d tokens, sha256 %s; want 199998 tokens of o200k_base.tiktoken, sha256 %s", v.n, got, want)
	}
	for _, s := range []string{"", "not-a-token-at-all-xyzzy", "\xff\xfe"} {
		if r := v.rank(s); r != noRank {
			t.Errorf("rank(%q) = %d", s, r)
		}
	}
}

// The table's slots were placed with hash/fnv; the lookup's own FNV-1a must
// be the same function.
func TestHashIsFNV1a(t *testing.T) {
	for _, s := range []string{"", "a", "hello", "\xff\x00\x80", strings.Repeat("zq", 50)} {
		h := fnv.New32a()
		h.Write([]byte(s))
		if got, want := fnv1a(s), h.Sum32(); got != want {
			t.Errorf("fnv1a(%q) = %x, want %x", s, got, want)
		}
	}
}

// Invalid UTF-8 counts as tiktoken counts the text decoded with
// errors="replace": one U+FFFD per maximal invalid subsequence.
func TestCountInvalidUTF8(t *testing.T) {
	for _, tc := range []struct{ in, as string }{
		{"a\xffb", "a\uFFFDb"},
		{"\xe2\x82", "\uFFFD"}, // a cut three-byte sequence is one
		{"\xe2\x82x\xff\xfe", "\uFFFDx\uFFFD\uFFFD"},
		{"\xf0\x9f\x98", "\uFFFD"},             // a cut emoji
		{"\xc0\xaf", "\uFFFD\uFFFD"},           // overlong: each byte
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"}, // a surrogate: each byte
	} {
		if got := validUTF8(tc.in); got != tc.as {
			t.Errorf("validUTF8(%q) = %q, want %q", tc.in, got, tc.as)
		}
		if got, want := Count(tc.in), Count(tc.as); got != want {
			t.Errorf("Count(%q) = %d, want %d (as %q)", tc.in, got, want, tc.as)
		}
	}
}

// The pieces cover the text exactly, and the two merge strategies agree.
func FuzzCount(f *testing.F) {
	for _, s := range []string{"hello  world", "  1", "a\xffb", "日本語 text\r\n\r\n", strings.Repeat("ab!", 100), "x'S'll"} {
		f.Add(s)
	}
	v := o200k()
	f.Fuzz(func(t *testing.T, s string) {
		s = validUTF8(s)
		var joined strings.Builder
		pieces(s, func(p string) {
			if p == "" {
				t.Fatal("empty piece")
			}
			joined.WriteString(p)
			if len(p) > 1 && v.rank(p) == noRank {
				if a, b := v.mergeScan(p), v.mergeHeap(p, &heapBuf{}); a != b {
					t.Errorf("piece %q: scan %d, heap %d", p, a, b)
				}
			}
		})
		if joined.String() != s {
			t.Fatalf("pieces of %q join to %q", s, joined.String())
		}
		if n := Count(s); n < 1 && s != "" || n > len(s) {
			t.Errorf("Count(%q) = %d", s, n)
		}
		if !utf8.ValidString(s) {
			t.Errorf("validUTF8 left invalid text %q", s)
		}
	})
}
