package main

import "github.com/spf13/cobra"

// newGraphCmd is a placeholder until the graph subcommand lands.
func newGraphCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "graph",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return fail(exitUsage, "%s is not built yet", "graph")
		},
	}
}
