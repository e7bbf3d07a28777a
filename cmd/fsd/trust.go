package main

import (
	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/trust"
)

// addTrustFlag registers --trust on a command that loads a workflow.
func addTrustFlag(cmd *cobra.Command, f *runFlags) {
	cmd.Flags().StringArrayVar(&f.trust, "trust", nil,
		"also let skills under DIR run command tools (repeatable; the workflow's folder is always trusted)")
}

// skillTrust decides which skills may run commands: those under the
// workflow's own folder or a --trust folder, symlinks resolved. A skill
// found through a `skills:` path outside the workflow's folder loads and
// its other tools work, but its command tools refuse until --trust covers
// it.
//
// T1: the roots come from the command line, never from the record.
func skillTrust(wf *spec.Workflow, extra []string) (func(*spec.Skill) bool, error) {
	dir := wf.Dir
	if dir == "" {
		dir = "."
	}
	if _, err := trust.New([]string{dir}); err != nil {
		return nil, fail(exitProblems, "workflow folder %v", err)
	}
	// Each --trust on its own first, so the error names the flag's value.
	for _, p := range extra {
		if _, err := trust.New([]string{p}); err != nil {
			return nil, fail(exitUsage, "--trust %v", err)
		}
	}
	roots, err := trust.New(append([]string{dir}, extra...))
	if err != nil {
		return nil, fail(exitUsage, "--trust: %v", err)
	}
	return roots.Skill, nil
}
