package diag

import "testing"

// TestSuggestCost: Suggest builds nothing per call but what a comparison
// needs. It built a strings.Replacer for every name it normalised, which
// made it most of the time `fsd validate` spent on a file of 100,000
// unknown keys (several seconds, where the rest took one).
func TestSuggestCost(t *testing.T) {
	known := []string{"id", "name", "description", "version", "channel", "preview", "instructions",
		"instructions-file", "license", "compatibility", "metadata", "allowed-tools", "approve",
		"sandbox", "tools", "mcp", "agents"}
	allocs := testing.AllocsPerRun(100, func() { Suggest("u12345", known, nil) })
	// Two rows per edit distance, one per known name: 34, and a few more.
	if allocs > 40 {
		t.Errorf("Suggest allocates %.0f times a call, want at most 40", allocs)
	}
}
