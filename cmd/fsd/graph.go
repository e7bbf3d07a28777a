package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/natsboard"
	"github.com/fsdrun/fsd/spec"
)

// newGraphCmd prints a workflow's static task board as Mermaid or DOT.
func newGraphCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "graph WORKFLOW",
		Short: "Print a workflow's static task board as Mermaid (default) or DOT",
		Long: "Print the static tasks of a workflow as a graph, arrows pointing from a dependency\n" +
			"to the task that waits for it. Pipe Mermaid into a Markdown file, DOT into `dot -Tsvg`.",
		Example: `  fsd graph pipeline.workflow.yaml > board.mmd
  fsd graph pipeline.workflow.yaml --format dot | dot -Tsvg > board.svg`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			render := board.Mermaid
			switch format {
			case "mermaid":
			case "dot":
				render = board.DOT
			default:
				return usage("unknown --format %q; use mermaid or dot", format)
			}
			path, err := workflowArg(args[0])
			if err != nil {
				return err
			}
			// The same checks as fsd validate (assignees, deps, cycles):
			// an invalid workflow is refused, never drawn.
			p, diags := spec.LoadProject(path, natsboard.CheckWorkflow)
			diags.Sort()
			if errs := diags.Errors(false); p == nil || len(errs) > 0 {
				for _, d := range errs {
					fmt.Fprintln(cmd.ErrOrStderr(), d.String())
				}
				return fail(exitProblems, "%s is not valid; nothing drawn", path)
			}
			w := p.Workflow
			if len(w.Tasks) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s has no static tasks: nothing to draw (the host adds tasks at run time)\n", path)
			}
			specs := make([]board.TaskSpec, len(w.Tasks))
			for i, t := range w.Tasks {
				specs[i] = board.TaskSpec{ID: t.ID, Goal: t.Goal, Assignee: t.Assignee, Deps: t.Deps, Input: t.Input}
			}
			fmt.Fprint(cmd.OutOrStdout(), render(specs))
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "mermaid", "output format: mermaid or dot")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"mermaid", "dot"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
