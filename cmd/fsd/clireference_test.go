package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// The CLI guide's table (docs/cli.md) has a row for every command help
// lists, and none for a hidden one. (The generated reference,
// docs/reference/cli.md, lists them by construction: TestReferencePages.)
func TestCLIReferenceListsEveryCommand(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "# The command line\n")
	if !ok {
		t.Fatal("docs/cli.md has no title \"The command line\"")
	}
	// The table is the first run of lines that start with "|".
	if i := strings.Index(table, "\n|"); i >= 0 {
		table = table[i:]
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" {
				continue // cobra's own; docs/cli.md has a paragraph on completion
			}
			row := "\n| [`" + sub.CommandPath()
			listed := strings.Contains(table, row+" ") || strings.Contains(table, row+"`")
			switch {
			case sub.Hidden && listed:
				t.Errorf("docs/cli.md lists the hidden %q", sub.CommandPath())
			case !sub.Hidden && sub.Runnable() && !listed:
				t.Errorf("docs/cli.md has no row for %q", sub.CommandPath())
			}
			walk(sub)
		}
	}
	walk(newRootCmd(io.Discard, io.Discard))
}
