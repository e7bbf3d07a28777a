package main

import (
	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/schemas"
)

func newSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema skill|skill-md|workflow|script|eval",
		Short: "Print the JSON Schema of skill manifests, workflows, scripted-model scripts or eval suites",
		Long: `Print an embedded JSON Schema (draft 2020-12). Point an editor at it with a
first line such as
  # yaml-language-server: $schema=` + schemas.Base + `skill.schema.json
"skill-md" prints the schema of SKILL.md frontmatter, "script" that of the
scripted model's *.script.yaml, "eval" that of fsd eval's *.eval.yaml.`,
		Example: `  fsd schema skill > skill.schema.json
  fsd schema workflow | jq .properties.limits`,
		ValidArgs: []string{"skill", "workflow", "skill-md", "script", "eval"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usage("name one schema: skill, workflow, script, eval, or skill-md for SKILL.md frontmatter")
			}
			var data []byte
			switch args[0] {
			case "skill":
				data = schemas.Skill()
			case "workflow":
				data = schemas.Workflow()
			case "skill-md":
				data = schemas.SkillMD()
			case "script":
				data = schemas.Script()
			case "eval":
				data = schemas.Eval()
			default:
				return usage("unknown schema %q; want skill, workflow, script, eval or skill-md", args[0])
			}
			if _, err := cmd.OutOrStdout().Write(data); err != nil {
				return fail(exitInternal, "%v", err)
			}
			return nil
		},
	}
}
