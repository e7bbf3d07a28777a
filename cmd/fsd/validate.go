package main

import "github.com/spf13/cobra"

// newValidateCmd is a placeholder until the validate subcommand lands.
func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "validate",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return fail(exitUsage, "%s is not built yet", "validate")
		},
	}
}
