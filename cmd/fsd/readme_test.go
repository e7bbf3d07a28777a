package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// The README's CLI reference has a row for every command help lists,
// and none for a hidden one.
func TestREADMEListsEveryCommand(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "## CLI reference\n")
	if !ok {
		t.Fatal("README has no CLI reference")
	}
	table, _, _ = strings.Cut(strings.TrimLeft(table, "\n"), "\n\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" {
				continue // cobra's own; the README has a paragraph on completion
			}
			row := "\n| `" + sub.CommandPath()
			listed := strings.Contains(table, row+" ") || strings.Contains(table, row+"`")
			switch {
			case sub.Hidden && listed:
				t.Errorf("the README's CLI reference lists the hidden %q", sub.CommandPath())
			case !sub.Hidden && sub.Runnable() && !listed:
				t.Errorf("the README's CLI reference has no row for %q", sub.CommandPath())
			}
			walk(sub)
		}
	}
	walk(newRootCmd(io.Discard, io.Discard))
}
