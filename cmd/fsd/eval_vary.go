package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/eval"
	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/spec"
)

// variant is one --vary: the eval again with a skill's description
// replaced.
type variant struct {
	skill, file, description string
	// dir is where its cassettes go under --record/--replay, beside the
	// report's own: vary1, vary2, … in the order the flags are given.
	dir string
}

func (v *variant) apply(p *spec.Project) {
	for _, s := range p.Skills {
		if s.ID == v.skill {
			s.Description = v.description
		}
	}
}

// parseVary reads each --vary SKILL.description=FILE. Without SKILL it is
// --skill, else the one skill the trigger cases test. The skill must be
// one of every suite's workflow.
func parseVary(f evalFlags, suites []*spec.EvalSuite) ([]*variant, error) {
	var out []*variant
	for i, arg := range f.vary {
		key, file, ok := strings.Cut(arg, "=")
		skill, field, dotted := strings.Cut(key, ".")
		if !dotted {
			skill, field = "", key
		}
		if !ok || field != "description" || file == "" {
			return nil, usage("--vary %s: want SKILL.description=FILE (or description=FILE)", arg)
		}
		if skill == "" {
			skill = f.skill
		}
		if skill == "" {
			tested := map[string]bool{}
			for _, s := range suites {
				for _, t := range s.Triggers {
					tested[t.Skill] = true
				}
			}
			if len(tested) != 1 {
				return nil, usage("--vary %s: name the skill, as SKILL.description=FILE (the trigger cases test %d skills)", arg, len(tested))
			}
			for id := range tested {
				skill = id
			}
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, usage("--vary %s: %s", arg, fsMessage(err))
		}
		desc := strings.TrimSpace(string(data))
		if desc == "" {
			return nil, usage("--vary %s: %s is empty; it holds the skill's alternative description", arg, file)
		}
		for _, s := range suites {
			p, _ := spec.LoadProjectLenient(s.WorkflowPath())
			if p == nil || !hasSkill(p, skill) {
				return nil, usage("--vary %s: workflow %s has no skill %q", arg, s.WorkflowPath(), skill)
			}
		}
		out = append(out, &variant{skill: skill, file: file, description: desc, dir: "vary" + strconv.Itoa(i+1)})
	}
	return out, nil
}

func hasSkill(p *spec.Project, id string) bool {
	for _, s := range p.Skills {
		if s.ID == id {
			return true
		}
	}
	return false
}

// runVariants runs the cases once more per variant, with the same
// options, and sets each beside rep; a variant's baseline is rep (V12).
func runVariants(ctx context.Context, rep *eval.Report, suites []*spec.EvalSuite, opts eval.Options, f evalFlags, vs []*variant, bar *progressBar) error {
	for _, v := range vs {
		opts.Start = evalStart(f, v)
		alt, err := eval.Run(ctx, suites, opts)
		bar.clear()
		if err != nil {
			return err
		}
		eval.Compare(alt, rep, "")
		rep.Variants = append(rep.Variants, eval.Variant{Skill: v.skill, File: v.file, Description: v.description, Report: alt})
	}
	return nil
}

// writeEvalHTML writes the report's page to path (- : stdout).
func writeEvalHTML(cmd *cobra.Command, rep *eval.Report, path string) error {
	secrets := redact.FromEnv(os.Environ())
	if path == "-" {
		if err := rep.WriteHTML(cmd.OutOrStdout(), secrets); err != nil {
			return fail(exitInternal, "writing the report: %v", err)
		}
		return nil
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fail(exitProblems, "-o %s: %v", path, err)
		}
	}
	fh, err := os.Create(path)
	if err != nil {
		return fail(exitProblems, "-o %s: %v", path, err)
	}
	err = rep.WriteHTML(fh, secrets)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(exitProblems, "-o %s: %v", path, err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "fsd eval: wrote %s\n", path)
	return nil
}
