package main

import (
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fsdrun/fsd/internal/golden"
)

// regenerate is the command that rewrites every generated reference page
// (docs' test of the same name renders the schemas' pages).
const regenerate = "go test ./docs ./cmd/fsd -run TestReferencePages -update"

// TestReferencePages: docs/reference/cli.md is the page rendered from the
// command tree, so every command, its usage, examples and flags are on it
// as --help prints them, and no hidden command or flag is. A page that
// differs fails with the diff and the command that rewrites it.
func TestReferencePages(t *testing.T) {
	t.Parallel()
	got, problems := renderCLIPage(newRootCmd(io.Discard, io.Discard))
	for _, p := range problems {
		t.Error(p)
	}
	golden.CheckString(t, filepath.Join("..", "..", "docs", "reference", "cli.md"), got)
}

// renderCLIPage renders every visible command of root, depth first in the
// order help lists them. problems name what would read wrong on the page.
func renderCLIPage(root *cobra.Command) (string, []string) {
	// cobra adds these two at Execute; the page shows what a user meets.
	root.InitDefaultHelpFlag()
	root.InitDefaultVersionFlag()
	root.InitDefaultCompletionCmd()

	var cmds []*cobra.Command
	var collect func(c *cobra.Command)
	collect = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		cmds = append(cmds, c)
		for _, sub := range c.Commands() {
			collect(sub)
		}
	}
	collect(root)

	var b strings.Builder
	fmt.Fprintf(&b, "<!-- Generated from fsd's commands by `%s`. Edit the commands' help, not this page. -->\n\n", regenerate)
	b.WriteString("# Command-line reference\n\n")
	b.WriteString("Every command of `fsd`, as its `--help` prints it: usage, examples and flags. " +
		"[The CLI guide](../cli.md) says how the commands work together, what `fsd` prints and " +
		"[what it exits with](../cli.md#exit-codes). Every command takes `-h`, `--help`, and the global flag " +
		"[`--color`](#fsd).\n\n")
	b.WriteString("| Command | Does |\n|---|---|\n")
	for _, c := range cmds[1:] {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s |\n", c.CommandPath(), anchorOf(c.CommandPath()), cell(c.Short))
	}
	b.WriteString("\n")

	var problems []string
	for _, c := range cmds {
		fmt.Fprintf(&b, "## %s\n\n", c.CommandPath())
		fmt.Fprintf(&b, "%s\n\n", text(c.Short))
		if c.Long != "" && strings.TrimSpace(c.Long) != strings.TrimSpace(c.Short) {
			fmt.Fprintf(&b, "%s\n\n", long(c.Long))
		}
		var usage []string
		if c.Runnable() {
			usage = append(usage, c.UseLine())
		}
		if c.HasAvailableSubCommands() {
			usage = append(usage, c.CommandPath()+" [command]")
		}
		fmt.Fprintf(&b, "```\n%s\n```\n\n", strings.Join(usage, "\n"))
		if c.HasAvailableSubCommands() {
			var subs []string
			for _, sub := range c.Commands() {
				if sub.IsAvailableCommand() && sub.Name() != "help" {
					subs = append(subs, fmt.Sprintf("[`%s`](#%s)", sub.Name(), anchorOf(sub.CommandPath())))
				}
			}
			fmt.Fprintf(&b, "Commands: %s.\n\n", strings.Join(subs, ", "))
		}
		if c.Example != "" {
			fmt.Fprintf(&b, "Examples:\n\n```sh\n%s\n```\n\n", dedent(c.Example))
		}
		// Inherited flags are listed once, where they are declared.
		flags := c.LocalFlags()
		var rows []string
		flags.VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			name, usage := pflag.UnquoteUsage(f)
			if name != "" && name != f.Value.Type() && !regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`).MatchString(name) && !isTypeName(name) {
				problems = append(problems, fmt.Sprintf("%s --%s: its help has `%s` in backquotes, which help prints as the flag's value (write a placeholder such as `URL` there)",
					c.CommandPath(), f.Name, name))
			}
			spelled := "`--" + f.Name + "`"
			if f.Shorthand != "" {
				spelled = "`-" + f.Shorthand + "`, " + spelled
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s |", spelled, flagType(f, name), flagDefault(f), cell(usage)))
		})
		if len(rows) > 0 {
			b.WriteString("| Flag | Value | Default | Description |\n|---|---|---|---|\n")
			b.WriteString(strings.Join(rows, "\n"))
			b.WriteString("\n\n")
		}
		if c.HasParent() && c.Parent() != root {
			var inherited []string
			c.InheritedFlags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden && root.PersistentFlags().Lookup(f.Name) == nil {
					inherited = append(inherited, "`--"+f.Name+"`")
				}
			})
			if len(inherited) > 0 {
				fmt.Fprintf(&b, "It also takes the flags of [`%s`](#%s): %s.\n\n",
					c.Parent().CommandPath(), anchorOf(c.Parent().CommandPath()), strings.Join(inherited, ", "))
			}
		}
	}
	return strings.TrimSuffix(b.String(), "\n"), problems
}

// isTypeName reports whether name is what pflag prints for a flag's value
// type when its help names no placeholder.
func isTypeName(name string) bool {
	switch name {
	case "string", "int", "duration", "strings", "stringArray", "bool", "float", "uint":
		return true
	}
	return false
}

// flagType is the value a flag takes: its placeholder (FILE, URL) or its
// type, and for a list, that it may be given again.
func flagType(f *pflag.Flag, name string) string {
	switch {
	case f.Value.Type() == "bool":
		return "none"
	case f.Value.Type() == "stringArray":
		return "string, repeatable"
	case name != "":
		return name
	}
	return f.Value.Type()
}

// flagDefault is a flag's default as help prints it, or nothing for the
// zero value (help prints none for those either).
func flagDefault(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "false", "0", "0s", "[]":
		return ""
	}
	return "`" + f.DefValue + "`"
}

// dedent removes the indent help gives every line of the examples.
func dedent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	for i, l := range lines {
		if len(l) >= indent {
			lines[i] = l[indent:]
		}
	}
	return strings.Join(lines, "\n")
}

// anchorOf is the anchor of the heading "## text" as the docs' link test
// and GitHub spell it.
func anchorOf(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// text escapes what markdown would read as markup outside code spans.
func text(s string) string {
	parts := strings.Split(strings.TrimSpace(s), "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = strings.NewReplacer(`\`, `\\`, "*", `\*`, "<", `\<`, ">", `\>`).Replace(parts[i])
	}
	return strings.Join(parts, "`")
}

// long renders a command's long help: its paragraphs as text, and its
// indented lines (commands to type) as code blocks, verbatim.
func long(s string) string {
	var blocks, para, code []string
	flush := func() {
		if len(para) > 0 {
			blocks = append(blocks, strings.Join(para, "\n"))
			para = nil
		}
		if len(code) > 0 {
			blocks = append(blocks, "```sh\n"+strings.Join(code, "\n")+"\n```")
			code = nil
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		switch {
		case strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "  "):
			if len(para) > 0 {
				flush()
			}
			code = append(code, strings.TrimLeft(l, " \t"))
		case strings.TrimSpace(l) == "":
			flush()
		default:
			if len(code) > 0 {
				flush()
			}
			para = append(para, text(l))
		}
	}
	flush()
	return strings.Join(blocks, "\n\n")
}

// cell is text fit for a table cell: one line, pipes escaped.
func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(text(s)), " "), "|", `\|`)
}
