package tokens

import (
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

func BenchmarkCount(b *testing.B) {
	doc := strings.Repeat("## Step\n\nFetch the rows for the ISO week, then summarise them in a table.\n\n", 1000)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		Count(doc)
	}
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
