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
	var agent string
	cmd := &cobra.Command{
		Use:   "context WORKFLOW",
		Short: "Print the host's first request as the model would see it, with token counts per block",
		Long: `Print the host's first request as the model would see it — context block, messages,
tools — with o200k_base token counts per block, after each catalog entry's cost.
With --agent SKILL/AGENT, print instead the first request of a worker of that agent:
its prompt, its catalog (the agent's skills:), the task message and its tools. The
task is the workflow's first task assigned to the agent (goal and input rendered
against the input; a dependency's result is a placeholder), else a placeholder.`,
		Example: `  fsd context hello.workflow.yaml
  fsd context hello.workflow.yaml -i "Welcome Grace."
  fsd context release.workflow.yaml --agent release/shipper
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
			if agent != "" {
				req, err := pr.run.WorkerRequest(agent, f.input)
				if err != nil {
					return usage("--agent: %v", err)
				}
				printRequest(cmd.OutOrStdout(), req)
				return nil
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
	cmd.Flags().StringVar(&agent, "agent", "", "print the first request of a worker of this agent (SKILL/AGENT) instead of the host's")
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
		n := messageTokens(m)
		winTokens += n
		fmt.Fprintf(&msgs, "--- %s (%d tokens)\n%s\n", m.Role, n, m.Text)
	}
	total += winTokens
	fmt.Fprintf(w, "=== messages: %d (%d tokens)\n%s", len(req.Messages), winTokens, msgs.String())
	toolsTotal := 0
	var tl strings.Builder
	for _, t := range req.Tools {
		n := toolTokens(t)
		toolsTotal += n
		fmt.Fprintf(&tl, "- %s (%d tokens): %s\n", t.Name, n, t.Description)
	}
	total += toolsTotal
	fmt.Fprintf(w, "=== tools: %d (%d tokens)\n%s", len(req.Tools), toolsTotal, tl.String())
	fmt.Fprintf(w, "=== total: %d tokens\n", total)
}

// messageTokens is a message's o200k_base count: its text and its calls'
// names and arguments.
func messageTokens(m model.Message) int {
	n := tokens.Count(m.Text)
	for _, c := range m.Calls {
		n += tokens.Count(c.Name) + tokens.Count(string(c.Args))
	}
	return n
}

// toolTokens is a tool's o200k_base count: name, description, parameters.
func toolTokens(t model.ToolDef) int {
	return tokens.Count(t.Name) + tokens.Count(t.Description) + tokens.Count(string(t.Parameters))
}
