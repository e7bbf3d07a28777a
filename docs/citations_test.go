package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// issueCitation is a reference to a tracker's entry by its number: the
// word issue, bug, ticket or PR followed by one, a hash and a number in
// parentheses, or a repository's name, a hash and a number
// (TestIssueCitationPattern has examples). The tracker is not in the
// repository, so such a citation tells a reader nothing; the text must
// give the reason itself.
var issueCitation = regexp.MustCompile(`(?i)\b(?:issues?|bugs?|tickets?|pull requests?|PRs?)\s*#?\d+\b|\(#\d+\)|\b[\w.-]+/[\w.-]+#\d+\b`)

// TestNoIssueNumbers fails when a Go comment, README.md or a page under
// docs/ cites an issue by its number. CHANGELOG.md, a log of changes,
// is left out.
func TestNoIssueNumbers(t *testing.T) {
	for file, texts := range readCode(t).comments {
		for _, text := range texts {
			for _, m := range issueCitation.FindAllString(text, -1) {
				t.Errorf("%s: a comment cites %q; say the reason instead of the issue", file, m)
			}
		}
	}
	pages := []string{"../README.md"}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range issueCitation.FindAllString(line, -1) {
				t.Errorf("%s:%d cites %q; say the reason instead of the issue", p, i+1, m)
			}
		}
	}
	if len(pages) < 3 {
		t.Errorf("read %d pages: is the walk finding docs/?", len(pages))
	}
}

// TestIssueCitationPattern: the pattern catches the forms a citation
// takes and leaves alone what only looks like one (a call id's attempt
// number, a heading link).
func TestIssueCitationPattern(t *testing.T) {
	for _, s := range []string{"issue 17", "(issue #12)", "Issue 3 asks", "see bug 4", "PR 12", "fixed in (#12)", "open-telemetry/opentelemetry-go#2579"} {
		if !issueCitation.MatchString(s) {
			t.Errorf("%q is not taken for an issue citation", s)
		}
	}
	for _, s := range []string{"task:deploy#2/s1/c1", "[Trust](trust.md#trust-and-limits)", "issues show", "max-steps 25", "the 2 issues"} {
		if issueCitation.MatchString(s) {
			t.Errorf("%q is taken for an issue citation", s)
		}
	}
}
