package main

import (
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// aliasFlag adds old as a hidden spelling of the flag canonical: both set
// one value, so scripts written with the old spelling keep working, while
// help and completion teach only the canonical one.
func aliasFlag(cmd *cobra.Command, old, canonical string) {
	f := cmd.Flags().Lookup(canonical)
	cmd.Flags().AddFlag(&pflag.Flag{
		Name: old, Value: f.Value, DefValue: f.DefValue, NoOptDefVal: f.NoOptDefVal,
		Usage: "same as --" + canonical, Hidden: true,
	})
}

// addFormatFlag adds --format, the one spelling of "print this command's
// result as text or JSON", with its values completed, and --json as its
// hidden alias for `--format json`.
func addFormatFlag(cmd *cobra.Command, format *string, usage string) {
	cmd.Flags().StringVar(format, "format", "text", usage)
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().AddFlag(&pflag.Flag{
		Name: "json", Value: jsonFlag{format}, DefValue: "false", NoOptDefVal: "true",
		Usage: "same as --format json", Hidden: true,
	})
}

// checkFormat is the usage error for a --format value other than text or json.
func checkFormat(format string) error {
	if format != "text" && format != "json" {
		return usage("--format must be text or json, not %q", format)
	}
	return nil
}

// jsonFlag is --json: a boolean that sets --format.
type jsonFlag struct{ format *string }

func (j jsonFlag) String() string   { return strconv.FormatBool(*j.format == "json") }
func (j jsonFlag) Type() string     { return "bool" }
func (j jsonFlag) IsBoolFlag() bool { return true }

func (j jsonFlag) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	switch {
	case on:
		*j.format = "json"
	case *j.format == "json":
		*j.format = "text"
	}
	return nil
}
