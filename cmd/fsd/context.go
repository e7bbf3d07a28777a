package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tokens"
)

func newContextCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "context WORKFLOW",
		Short: "Print the host's first request as the model would see it, with token counts per block",
		Example: `  fsd context hello.workflow.yaml
  fsd context hello.workflow.yaml -i "Welcome Grace."
  git log -1 --format=%B | fsd context release.workflow.yaml -i -`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := workflowArg(args[0])
			if err != nil {
				return err
			}
			if f.input, err = readInput(f.input, cmd.InOrStdin()); err != nil {
				return err
			}
			f.offline = true // nothing is sent: no API key is needed
			pr, err := prepare(path, f, engine.Options{}, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			req, err := pr.run.FirstRequest(f.input)
			if err != nil {
				return fail(exitProblems, "%v", err)
			}
			cat := pr.run.Catalog()
			ids := make([]string, 0, len(pr.project.Skills))
			for _, s := range spec.CatalogSkills(pr.project.Workflow, pr.project.Skills) {
				ids = append(ids, s.ID)
			}
			writeCatalogCost(cmd.OutOrStdout(), cat, ids)
			printRequest(cmd.OutOrStdout(), req)
			return nil
		},
	}
	cmd.Flags().StringVarP(&f.input, "input", "i", "", inputUsage)
	cmd.Flags().StringVar(&f.model, "model", "", "model (default: the workflow's)")
	_ = cmd.RegisterFlagCompletionFunc("model", completeModels)
	addTrustFlag(cmd, &f)
	return cmd
}

// printRequest renders a request block by block with o200k_base token
// counts.
func printRequest(w io.Writer, req *model.Request) {
	ctxTokens := tokens.Count(req.Context)
	fmt.Fprintf(w, "=== context (%d tokens)\n%s\n", ctxTokens, strings.TrimRight(req.Context, "\n"))
	total := ctxTokens
	winTokens := 0
	var msgs strings.Builder
	for _, m := range req.Messages {
		n := tokens.Count(m.Text)
		for _, c := range m.Calls {
			n += tokens.Count(c.Name) + tokens.Count(string(c.Args))
		}
		winTokens += n
		fmt.Fprintf(&msgs, "--- %s (%d tokens)\n%s\n", m.Role, n, m.Text)
	}
	total += winTokens
	fmt.Fprintf(w, "=== messages: %d (%d tokens)\n%s", len(req.Messages), winTokens, msgs.String())
	toolTokens := 0
	var tl strings.Builder
	for _, t := range req.Tools {
		n := tokens.Count(t.Name) + tokens.Count(t.Description) + tokens.Count(string(t.Parameters))
		toolTokens += n
		fmt.Fprintf(&tl, "- %s (%d tokens): %s\n", t.Name, n, t.Description)
	}
	total += toolTokens
	fmt.Fprintf(w, "=== tools: %d (%d tokens)\n%s", len(req.Tools), toolTokens, tl.String())
	fmt.Fprintf(w, "=== total: %d tokens\n", total)
}
