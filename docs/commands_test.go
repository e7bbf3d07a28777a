package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCommandsNameRealExamples fails when a command in a shell block of
// README.md or a page of docs/ names a file or folder under examples/ that
// is not there, as after an example is renamed: the guides tell readers to
// paste these commands, so each must find what it runs.
func TestCommandsNameRealExamples(t *testing.T) {
	example := regexp.MustCompile(`(?:^|[\s=/'"(])(examples/[^\s'"),;]*)`)
	n := 0
	for file, text := range manual(t) {
		block := false
		for i, line := range strings.Split(text, "\n") {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "```") {
				block = trimmed == "```sh" || trimmed == "```bash"
				continue
			}
			if !block {
				continue
			}
			command, _, _ := strings.Cut(trimmed, "#") // a comment may mention examples in prose
			for _, m := range example.FindAllStringSubmatch(command, -1) {
				n++
				p := strings.TrimRight(m[1], ".:")
				if _, err := os.Stat(filepath.Join("..", filepath.FromSlash(p))); err != nil {
					t.Errorf("%s:%d: the command names %s, which does not exist", file, i+1, p)
				}
			}
		}
	}
	if n == 0 {
		t.Error("no command naming an example found: is the pattern reading the pages?")
	}
}
