package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// replace_all of a short string with a long one is refused, the file
// unchanged, when the result would pass the size Edit writes: it would be
// built in memory whole, and 10 MiB of one letter replaced by 1,000 was a
// 10 GB allocation that killed fsd.
func TestEditReplaceAllBounded(t *testing.T) {
	f := newFixture(t)
	p := filepath.Join(f.dir, "big.txt")
	content := strings.Repeat("a", 1<<20)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, isErr := f.call(t, "Edit", `{"file_path":"big.txt","old_string":"a","new_string":"`+strings.Repeat("b", 20)+`","replace_all":true}`)
	if !isErr || !strings.Contains(got, "over the 10 MiB Edit writes") {
		t.Fatalf("want a refusal naming the bound, got %v: %.200s", isErr, got)
	}
	if b, _ := os.ReadFile(p); string(b) != content {
		t.Error("big.txt changed")
	}
	// Within the bound it still replaces every occurrence.
	if got, isErr := f.call(t, "Edit", `{"file_path":"big.txt","old_string":"a","new_string":"bb","replace_all":true}`); isErr || !strings.Contains(got, "1048576 replacements") {
		t.Fatalf("want every occurrence replaced, got %v: %.200s", isErr, got)
	}
}
