package docs

import (
	"os"
	"sort"
	"strings"
	"testing"
)

// TestFuzzTargetsListed: building.md's Testing section names every fuzz
// target of the module with its package, so a new one is not left for a
// reader to find.
func TestFuzzTargetsListed(t *testing.T) {
	b, err := os.ReadFile("building.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	var missing []string
	for dir, funcs := range readCode(t).funcs {
		for _, fn := range funcs {
			if !strings.HasPrefix(fn, "Fuzz") {
				continue
			}
			if !strings.Contains(page, "`"+fn+"`") || !strings.Contains(page, "./"+dir) {
				missing = append(missing, fn+" (./"+dir+")")
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/building.md's Testing section does not name these fuzz targets and their packages: %s", strings.Join(missing, ", "))
	}
}
