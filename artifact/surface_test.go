package artifact

import (
	"testing"

	"github.com/fsdrun/fsd/tokens"
)

// Every reader is in every request while a handle skill is loaded: all
// their definitions together cost at most 600 tokens (o200k, counted as
// request events count tools), against 2,202 before (issue 14).
func TestReaderSurfaceTokens(t *testing.T) {
	total := 0
	for _, d := range Tools() {
		total += tokens.Count(d.Name) + tokens.Count(d.Description) + tokens.Count(string(d.Parameters))
	}
	t.Logf("reader definitions: %d tokens", total)
	if total > 600 {
		t.Errorf("reader definitions cost %d tokens, want at most 600", total)
	}
	if len(Tools()) != len(Describe()) {
		t.Error("a reader without a description")
	}
}
