package main

import "github.com/spf13/cobra"

// newContextCmd is a placeholder until the context subcommand lands.
func newContextCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "context",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return fail(exitUsage, "%s is not built yet", "context")
		},
	}
}
