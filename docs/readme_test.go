package docs

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestCIRunsTheReadmeCommands: the two commands of README.md's first
// screen are what .ci/run runs, word for word, so the front page's promise
// that they work on a fresh clone is what CI checks.
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
			if strings.Contains(line, cmd) && !strings.HasPrefix(strings.TrimSpace(line), "#") {
				found = true
			}
		}
		if !found {
			t.Errorf(".ci/run does not run README.md's command %q", cmd)
		}
	}
}
