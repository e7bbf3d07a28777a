package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/scaffold"
)

func newInitCmd() *cobra.Command {
	var template string
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Start a project: a skill, a workflow and a script that validate and run offline",
		Long: `Write a starting project into DIR (default: the current folder), creating it if
needed: a skill, a workflow and a script for the built-in scripted model, so it
validates and runs at once without an API key. Workflow and skill YAML files
start with a yaml-language-server modeline, so editors complete and check
them. fsd init never overwrites a file: if one is there, it writes nothing.

Templates:
` + templateList(),
		Example: `  fsd init hello
  fsd init --template pipeline reports
  fsd init -t agent-skills .`,
		Args:              usageArgs(cobra.MaximumNArgs(1)),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !contains(scaffold.Names, template) {
				return usage("unknown --template %q; want %s", template, strings.Join(scaffold.Names, ", "))
			}
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			written, err := scaffold.Write(dir, template)
			var ee *scaffold.ExistsError
			if errors.As(err, &ee) {
				return fail(exitProblems, "%v; nothing was written (fsd init never overwrites: pick a new folder, e.g. fsd init my-project)", err)
			}
			if err != nil {
				return fail(exitProblems, "%v", err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Wrote the %s template: %s.\n", template, scaffold.About(template))
			for _, p := range written {
				fmt.Fprintf(out, "  %s\n", p)
			}
			fmt.Fprintln(out, "\nNext:")
			for _, c := range scaffold.Next(dir, template) {
				fmt.Fprintf(out, "  %s\n", c)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&template, "template", "t", scaffold.Names[0], "what to start from: "+strings.Join(scaffold.Names, ", "))
	_ = cmd.RegisterFlagCompletionFunc("template", cobra.FixedCompletions(scaffold.Names, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func templateList() string {
	var b strings.Builder
	for _, n := range scaffold.Names {
		fmt.Fprintf(&b, "  %-13s %s\n", n, scaffold.About(n))
	}
	return strings.TrimRight(b.String(), "\n")
}
