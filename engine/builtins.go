package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tool"
	"github.com/fsdrun/fsd/workspace"
)

// kindBuiltin marks a built-in action tool (workspace.Tool): it belongs
// to the workflow, not to a skill, so skill trust does not gate it.
const kindBuiltin spec.RunKind = "builtin"

// builtinCallable is a built-in tool as the engine calls a skill's.
type builtinCallable struct{ t *workspace.Tool }

func (b builtinCallable) Def() model.ToolDef { return b.t.Def() }

func (b builtinCallable) Call(ctx context.Context, args json.RawMessage, _ tool.KV) tool.Result {
	return b.t.Call(ctx, args)
}

// builtins binds the built-in tools names to the workspace ws, in the
// order Names lists them; readOnly names the folders Read, Glob and
// Grep may read besides it. Bash's output is masked as a command's.
//
// Every built-in call is journaled as a command's is (skillTool.external):
// Bash, Write and Edit change things outside fsd, and Read, Glob and
// Grep read what later calls may have changed since, so a resume takes
// their journaled results rather than calling them again.
func (tb *toolbox) builtins(names []string, readOnly func() []string) []skillTool {
	var out []skillTool
	for _, name := range workspace.Names() {
		if !slices.Contains(names, name) {
			continue
		}
		// Bash's programs run in the workflow's sandbox (no skill's own
		// settings: the tool is the workflow's), the loaded skills'
		// folders readable.
		t, err := workspace.NewTool(name, tb.ws, readOnly, tool.WithMask(tb.secrets.String),
			tool.WithSandbox(tb.sandboxFor(nil, nil)), tool.WithWrap(tb.wrap))
		if err != nil {
			continue // a name spec checked: every one is known
		}
		out = append(out, skillTool{callable: builtinCallable{t}, kind: kindBuiltin, effect: workspace.Effect(name)})
	}
	return out
}

// writeSkillFolders tells a generator offered built-in tools where its
// loaded skills' files are: a skill's instructions say "run
// scripts/x.py", and Bash runs in the workspace, so the model needs the
// folder to name them; Read, Glob and Grep read there.
func writeSkillFolders(b *strings.Builder, skills []*spec.Skill) {
	if len(skills) == 0 {
		return
	}
	b.WriteString("<skill_folders>\n")
	for _, s := range skills {
		fmt.Fprintf(b, "%s: %s\n", s.ID, absPath(s.Dir))
	}
	b.WriteString("</skill_folders>\n" +
		"A skill's files are in its folder: Read, Glob and Grep read them there (absolute paths); Bash and scripts run in the workspace, " +
		"so name a skill's script by its folder (python3 FOLDER/scripts/x.py). Write and Edit change the workspace only.\n")
}

// offeredBuiltins are the built-in tools an agent's worker is offered:
// the default worker gets the workflow's tools:, an agent those of them
// it lists. A skill cannot widen what the workflow offers.
//
// T8: the built-ins are the workflow's to offer.
func offeredBuiltins(workflow []string, agent *spec.Agent) []string {
	if agent == nil {
		return slices.Clone(workflow)
	}
	var out []string
	for _, n := range agent.Tools {
		if slices.Contains(workflow, n) && slices.Contains(spec.WorkspaceTools, n) {
			out = append(out, n)
		}
	}
	return out
}

// workspaceDir decides the run's workspace folder, once: a resume's is
// the one its run.json records (a completed Write is not made again, so
// its file must be where the run left it); else Options.Workspace, else
// the workflow's workspace:, else a fresh folder workspace/ in the run
// record (recordDir), else — a run without a record — a fresh temporary
// folder, which temp says to remove when the run ends.
func (r *Run) workspaceDir(recordDir string) (dir string, temp bool, err error) {
	if j := r.journal(); j != nil && j.Summary.Workspace != "" {
		return j.Summary.Workspace, false, nil // New refused another
	}
	switch {
	case r.opts.Workspace != "":
		return absPath(r.opts.Workspace), false, nil
	case r.wf.WorkspaceDir() != "":
		return absPath(r.wf.WorkspaceDir()), false, nil
	case recordDir != "":
		return filepath.Join(recordDir, runrecord.WorkspaceDir), false, nil
	}
	dir, err = os.MkdirTemp("", "fsd-workspace-")
	return dir, true, err
}

// resumeWorkspace refuses a resume asked to work in another folder than
// the one its run.json records.
func resumeWorkspace(opts Options, j *Replay) error {
	if j == nil || j.Summary.Workspace == "" || opts.Workspace == "" || absPath(opts.Workspace) == j.Summary.Workspace {
		return nil
	}
	return fmt.Errorf("%w: the run works in %s; a resume cannot move it to %s", ErrNotResumable, j.Summary.Workspace, opts.Workspace)
}

// openWorkspace opens the run's workspace (creating it) and hands it to
// the toolbox: every program the run starts for a skill works there.
// close removes a temporary one.
func (r *Run) openWorkspace(recordDir string) (close func(), err error) {
	dir, temp, err := r.workspaceDir(recordDir)
	if err != nil {
		return func() {}, err
	}
	close = func() {}
	if temp {
		close = func() { _ = os.RemoveAll(dir) }
	}
	hide := r.records()
	ws, err := workspace.Open(dir, hide...)
	if err != nil {
		return close, err
	}
	r.box.ws, r.box.hide = ws, hide
	r.log.Debug().Str("workspace", ws.Dir()).Msg("workspace")
	return close, nil
}

// records are the folders of run records that neither the built-in tools
// nor a sandboxed program may reach, should the workspace hold them
// (`workspace: .` in the project's folder): the runs folder and the
// project's .fsd folder that holds it. A program that could write them
// could forge an approval or rewrite a run's journal.
func (r *Run) records() []string {
	if r.opts.RunsDir == "" {
		return nil
	}
	runs := absPath(r.opts.RunsDir)
	if parent := filepath.Dir(runs); filepath.Base(parent) == runrecord.ProjectFolder {
		return []string{parent}
	}
	return []string{runs}
}
