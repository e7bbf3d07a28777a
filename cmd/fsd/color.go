package main

import (
	"fmt"
	"io"
	"os"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

// colorMode is the value of the global --color flag.
type colorMode string

const (
	colorAuto   colorMode = "auto"   // colour when writing to a terminal, unless NO_COLOR is set
	colorAlways colorMode = "always" // colour even into files and pipes
	colorNever  colorMode = "never"
)

var colorModes = []string{string(colorAuto), string(colorAlways), string(colorNever)}

func (m *colorMode) String() string { return string(*m) }
func (m *colorMode) Type() string   { return "when" }
func (m *colorMode) Set(s string) error {
	if !contains(colorModes, s) {
		return fmt.Errorf("want auto, always or never, not %q", s)
	}
	*m = colorMode(s)
	return nil
}

// addColorFlag registers --color on the root command; every subcommand
// inherits it.
func addColorFlag(root *cobra.Command) {
	mode := colorAuto
	root.PersistentFlags().Var(&mode, "color", "colour: auto (on a terminal only), always, never; a non-empty NO_COLOR turns it off")
	_ = root.RegisterFlagCompletionFunc("color", cobra.FixedCompletions(colorModes, cobra.ShellCompDirectiveNoFileComp))
}

// useColor decides whether output to w may carry ANSI colour. A NO_COLOR
// that is set and not empty (https://no-color.org) turns colour off
// whatever the flag says (the -v logger honours it on its own too, so
// fsd stays consistent); otherwise --color always and never decide, and
// auto colours a terminal whose TERM is not "dumb".
func useColor(cmd *cobra.Command, w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	mode := colorAuto
	if f := cmd.Flags().Lookup("color"); f != nil {
		if m, ok := f.Value.(*colorMode); ok {
			mode = *m
		}
	}
	switch mode {
	case colorAlways:
		return true
	case colorNever:
		return false
	}
	return os.Getenv("TERM") != "dumb" && isTerminal(w)
}

// consoleLogger is the -v logger: human-readable lines on w, coloured only
// when color is set.
func consoleLogger(w io.Writer, color bool) zerolog.Logger {
	return zerolog.New(zerolog.ConsoleWriter{Out: w, NoColor: !color}).With().Timestamp().Logger()
}
