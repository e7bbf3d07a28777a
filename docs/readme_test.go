package docs

import (
	"os"
	"regexp"
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
