package docs

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/provider"
)

// TestModelCapabilitiesTable holds models.md's table of what each model
// takes to the providers' own tables (provider.Capabilities, which builds
// the model from the registry) and to the registry: every provider has a
// row, and every row's model is one the registry builds.
func TestModelCapabilitiesTable(t *testing.T) {
	b, err := os.ReadFile("models.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## What each model takes\n")
	if !ok {
		t.Fatal("models.md has no section \"What each model takes\"")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	first := regexp.MustCompile("^\\| `([^`]+)`")
	yes := map[string]bool{"yes": true, "no": false}
	covered := map[string]bool{}
	rows := 0
	for _, line := range strings.Split(sec, "\n") {
		m := first.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		name := m[1]
		if _, err := provider.ParseChain(name); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		prov, _, _ := strings.Cut(name, "/")
		covered[prov] = true
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 6 {
			t.Errorf("%s: %d cells, want 6", name, len(cells))
			continue
		}
		var doc [5]bool
		for i, c := range cells[1:] {
			v, ok := yes[strings.TrimSpace(c)]
			if !ok {
				t.Errorf("%s: cell %q is not yes or no", name, c)
			}
			doc[i] = v
		}
		c := provider.Capabilities(name)
		got := model.Capabilities{Tools: doc[0], Images: doc[1], Audio: doc[2], TypedOutput: doc[3], Caching: doc[4]}
		if got != c {
			t.Errorf("%s: the table says %+v, the provider %+v", name, got, c)
		}
	}
	if rows == 0 {
		t.Fatal("no rows read")
	}
	for _, p := range provider.Providers() {
		if !covered[p.Name] {
			t.Errorf("provider %s has no row in models.md's table of what each model takes", p.Name)
		}
	}
}
