package tokens

import (
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestCount(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		// Reference values from tiktoken's o200k_base.
		{"hello world", "hello world", 2},
		{"sentence", "The quick brown fox jumps over the lazy dog.", 10},
		{"invalid utf8", "a\xffb", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Count(tt.in); got != tt.want {
				t.Errorf("Count(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestCountConcurrent(t *testing.T) {
	const text = "Builds the weekly sales report. Use when asked for sales figures."
	want := Count(text)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got := Count(text); got != want {
				t.Errorf("concurrent Count = %d, want %d", got, want)
			}
		})
	}
	wg.Wait()
}

// A run without spaces is one piece however long; merged in chunks, its
// count costs memory bounded by a chunk, not by the run (merged whole, a
// run of MaxExact letters needed 40 MB).
func TestCountLongRunMemory(t *testing.T) {
	s := spaceFreeText(MaxExact)
	Count("warm up") // the vocabulary and the pattern, once per process
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	Count(s)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > uint64(len(s)) {
		t.Errorf("counting %d bytes without a space allocated %d bytes; want at most the text's size", len(s), got)
	}
}

// Merging in chunks changes a long piece's count by at most two tokens
// per chunk boundary (in practice about one, under 0.3 % of the count).
func TestChunkedCountNearExact(t *testing.T) {
	v := o200k()
	letters := func(alphabet string, n int, seed uint32) string {
		runes := []rune(alphabet)
		var b strings.Builder
		for x := seed; b.Len() < n; {
			x = x*1664525 + 1013904223
			b.WriteRune(runes[int(x>>16)%len(runes)])
		}
		return b.String()
	}
	for name, s := range map[string]string{
		"latin":    spaceFreeText(64 << 10),
		"hex":      letters("abcdef", 64<<10, 6),
		"symbols":  letters("!@#$%^&*()-_=+[]{};:,.<>?|~`", 64<<10, 5),
		"cyrillic": letters("абвгдеёжзийклмнопрстуфхцчшщъыьэюя", 64<<10, 4),
		"thai":     letters("กขคงจฉชซฌญฎฏฐฑฒณดตถทธนบปผฝพฟภมยรลวศษสหฬอฮะาำ", 64<<10, 3),
		"cjk":      letters("的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生", 64<<10, 2),
		"periodic": strings.Repeat("abcdefghij", 6<<10),
	} {
		if n := next(s, 0); n != len(s) {
			t.Fatalf("%s: the first piece is %d of %d bytes; the case needs one piece", name, n, len(s))
		}
		exact := v.mergeHeap(s, &heapBuf{})
		got := v.countPiece(s)
		if bound := 2 * (len(s) / maxPiece); got < exact-bound || got > exact+bound {
			t.Errorf("%s: %d tokens in chunks, %d merged whole; want within %d", name, got, exact, bound)
		}
	}
}

// Past MaxExact bytes Count estimates at the counted part's rate and does
// not read the rest: prose followed by three times as many bytes of one
// letter (which would count far fewer tokens) counts as four times the prose.
func TestCountEstimatesBeyondMaxExact(t *testing.T) {
	head := wordedText(MaxExact)
	n := Count(head)
	s := head + strings.Repeat("x", 3*MaxExact)
	if got := Count(s); got != 4*n {
		t.Errorf("Count = %d, want %d (4 × the first MaxExact bytes' %d)", got, 4*n, n)
	}
	if exact := n + Count(strings.Repeat("x", 3*MaxExact)); exact == 4*n {
		t.Fatal("the test text cannot tell an estimate from an exact count")
	}
}

// BenchmarkCount counts a document of short lines, and 1 MiB and 8 MiB
// of worded text and of text without spaces (one letter run, so one
// piece): the two should cost about the same per byte.
func BenchmarkCount(b *testing.B) {
	for _, bc := range []struct {
		name string
		text string
	}{
		{"doc", strings.Repeat("## Step\n\nFetch the rows for the ISO week, then summarise them in a table.\n\n", 1000)},
		{"words-1MiB", wordedText(1 << 20)},
		{"words-8MiB", wordedText(8 << 20)},
		{"spacefree-1MiB", spaceFreeText(1 << 20)},
		{"spacefree-8MiB", spaceFreeText(8 << 20)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.text)))
			b.ReportAllocs()
			for b.Loop() {
				Count(bc.text)
			}
		})
	}
}

// wordedText is n bytes of English-like words and spaces.
func wordedText(n int) string {
	const words = "the quick brown fox jumps over lazy dogs while seven wizards quietly judge boxing matches "
	return strings.Repeat(words, n/len(words)+1)[:n]
}

// spaceFreeText is n bytes of pseudo-random lowercase letters: one piece
// to the splitter, the worst case for merging.
func spaceFreeText(n int) string {
	b := make([]byte, n)
	x := uint32(1)
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = 'a' + byte(x>>24)%26
	}
	return string(b)
}

// A long run of letters is one piece: the heap merge keeps it from being
// quadratic.
func BenchmarkCountLongPiece(b *testing.B) {
	doc := strings.Repeat("ACGTTGCA", 16<<10)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		Count(doc)
	}
}

// What a process pays before its first count: a view of the embedded
// table (no parsing, no copy).
func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = newVocab(o200kBase)
	}
}
