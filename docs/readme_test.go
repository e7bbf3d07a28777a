package docs

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCIRunsTheReadmeCommands: the two commands of README.md's first
// screen are what .ci/run runs — the first word for word, the test command
// perhaps with more flags — so the front page's promise that they work on
// a fresh clone is what CI checks.
func TestCIRunsTheReadmeCommands(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindSubmatch(readme)
	if block == nil {
		t.Fatal("README.md has no sh block")
	}
	var commands []string
	for _, line := range strings.Split(string(block[1]), "\n") {
		if cmd, _, _ := strings.Cut(line, "#"); strings.TrimSpace(cmd) != "" {
			commands = append(commands, strings.TrimSpace(cmd))
		}
	}
	if len(commands) != 2 {
		t.Fatalf("README.md's first sh block has %d commands, want two (run, test): %q", len(commands), commands)
	}
	if before, _, _ := strings.Cut(string(readme), "```sh"); strings.Count(before, "\n") > 40 {
		t.Errorf("README.md's two commands start on line %d, past the first screen", strings.Count(before, "\n")+1)
	}
	for _, cmd := range commands {
		found := false
		for _, line := range strings.Split(string(ci), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			if strings.Contains(line, cmd) || bare(line) == bare(cmd) {
				found = true
			}
		}
		if !found {
			t.Errorf(".ci/run does not run README.md's command %q", cmd)
		}
	}
}

// bare is a command line without its environment assignments and flags:
// CI may run README's `go test ./...` as `FSD_LONG_TESTS=1 go test -race
// -count=1 ./...`, the same command with more checks, not another one.
func bare(line string) string {
	var words []string
	for _, w := range strings.Fields(line) {
		if strings.HasPrefix(w, "-") || (strings.Contains(w, "=") && !strings.Contains(w, "/")) {
			continue
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// TestReadmeInvariantRanges: where README.md names a range of design.md's
// invariants ("[J1–J9](docs/design.md#…)"), it ends at the table's last
// id, so a new rule is never left out of the front page's count.
func TestReadmeInvariantRanges(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]int{}
	for _, m := range invariantRow.FindAllStringSubmatch(readDesign(t), -1) {
		n, _ := strconv.Atoi(m[1][1:])
		last[m[1][:1]] = max(last[m[1][:1]], n)
	}
	ranges := regexp.MustCompile(`\[([A-Z])1–([A-Z])([0-9]+)\]\(docs/design\.md`).FindAllStringSubmatch(string(readme), -1)
	if len(ranges) == 0 {
		t.Fatal("README.md names no range of invariants; this test looks for [X1–XN](docs/design.md#…)")
	}
	for _, r := range ranges {
		if n, _ := strconv.Atoi(r[3]); r[1] != r[2] || n != last[r[1]] {
			t.Errorf("README.md names %s1–%s%s, but design.md's %s rows end at %s%d", r[1], r[2], r[3], r[1], r[1], last[r[1]])
		}
	}
}
