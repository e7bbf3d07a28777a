package main

import "github.com/spf13/cobra"

// newRunCmd is a placeholder until the run subcommand lands.
func newRunCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "run",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return fail(exitUsage, "%s is not built yet", "run")
		},
	}
}
