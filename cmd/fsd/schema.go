package main

import "github.com/spf13/cobra"

// newSchemaCmd is a placeholder until the schema subcommand lands.
func newSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "schema",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return fail(exitUsage, "%s is not built yet", "schema")
		},
	}
}
