package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/workspace"
)

// builtinProject is a host workflow offering every built-in tool.
func builtinProject(skills ...*spec.Skill) *spec.Project {
	p := project(skills...)
	p.Workflow.Tools = workspace.Names()
	return p
}

// The host writes a file with Write, edits it with Edit, runs Bash on it
// in the workspace, reads it back with Read and finds it with Glob and
// Grep; the file is in the run's default workspace, inside its record.
func TestBuiltinsActInTheWorkspace(t *testing.T) {
	testpar.UnlessRace(t)
	p := builtinProject()
	runs := t.TempDir()
	res, m, _, err := runWith(t, p, Options{RunsDir: runs},
		call("Write", map[string]string{"file_path": "out/notes.md", "content": "# Notes\nfirst draft\n"}),
		call("Edit", map[string]string{"file_path": "out/notes.md", "old_string": "first draft", "new_string": "final text\nsecond line"}),
		call("Bash", map[string]string{"command": "pwd; cat out/notes.md; wc -l < out/notes.md"}),
		call("Read", map[string]any{"file_path": "out/notes.md", "offset": 2}),
		call("Glob", map[string]string{"pattern": "**/*.md"}),
		call("Grep", map[string]string{"pattern": "second", "output_mode": "content"}),
		say("done"))
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(res.Dir, "workspace")
	if res.Workspace != want {
		t.Errorf("workspace %q, want %q (inside the run record)", res.Workspace, want)
	}
	if got := string(readFile(t, filepath.Join(want, "out", "notes.md"))); got != "# Notes\nfinal text\nsecond line\n" {
		t.Errorf("out/notes.md = %q", got)
	}
	reqs := m.requests()
	if names := toolNames(reqs[0]); !slices.Equal(names[:7], []string{"read_skill", "Bash", "Read", "Write", "Edit", "Glob", "Grep"}) {
		t.Errorf("tools offered %v", names)
	}
	for i, want := range []string{
		"Wrote out/notes.md",
		"Edited out/notes.md: 1 replacement",
		want + "\n# Notes\nfinal text\nsecond line\n3\n",
		"     2\tfinal text\n     3\tsecond line\n",
		"out/notes.md\n",
		"out/notes.md:3:second line\n",
	} {
		if got := lastResult(reqs[i+1]); got.IsError || got.Text != want && !strings.HasPrefix(got.Text, want) {
			t.Errorf("call %d (%s) answered %q, want %q", i+1, got.Name, got.Text, want)
		}
	}
}

// A path outside the workspace is a tool error naming the workspace,
// and nothing is written there.
func TestBuiltinEscapeIsAToolError(t *testing.T) {
	testpar.UnlessRace(t)
	p := builtinProject()
	outside := filepath.Join(t.TempDir(), "pwned.txt")
	res, m, _, err := runWith(t, p, Options{RunsDir: t.TempDir()},
		call("Write", map[string]string{"file_path": outside, "content": "x"}),
		say("done"))
	if err != nil {
		t.Fatal(err)
	}
	got := lastResult(m.requests()[1])
	if !got.IsError || !strings.Contains(got.Text, "outside the workspace "+res.Workspace) {
		t.Errorf("the model read %+v", got)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("the file outside the workspace was written")
	}
}

// workspace: . is the workflow's folder; --workspace (Options.Workspace)
// wins over it; built-ins are offered only when tools: lists them.
func TestWorkspaceFolder(t *testing.T) {
	testpar.UnlessRace(t)
	wfDir, flagDir := t.TempDir(), filepath.Join(t.TempDir(), "made")
	for _, tt := range []struct {
		name, key, opt string
		want           string
	}{
		{"workspace: .", ".", "", wfDir},
		{"workspace: out", "out", "", filepath.Join(wfDir, "out")},
		{"--workspace wins", ".", flagDir, flagDir},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := project()
			p.Workflow.Dir, p.Workflow.Workspace, p.Workflow.Tools = wfDir, tt.key, []string{"Write"}
			res, m, _, err := runWith(t, p, Options{RunsDir: t.TempDir(), Workspace: tt.opt},
				call("Write", map[string]string{"file_path": "hello.txt", "content": tt.name}), say("done"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Workspace != tt.want {
				t.Errorf("workspace %q, want %q", res.Workspace, tt.want)
			}
			if got := string(readFile(t, filepath.Join(tt.want, "hello.txt"))); got != tt.name {
				t.Errorf("hello.txt = %q", got)
			}
			if names := toolNames(m.requests()[0]); has(names, "Bash") || !has(names, "Write") {
				t.Errorf("offered %v; want Write and no other built-in", names)
			}
		})
	}
}

// A command tool runs in the workspace, with its skill's folder as
// SKILL_DIR; a run_skill_script script too.
func TestProgramsRunInTheWorkspace(t *testing.T) {
	testpar.UnlessRace(t)
	s := skill("ops", "1.0.0", spec.ChannelInline)
	s.Dir = t.TempDir()
	if err := os.MkdirAll(filepath.Join(s.Dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "scripts", "where.sh"), []byte("pwd\necho \"$SKILL_DIR\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Resources = []string{"scripts/where.sh"}
	s.Tools = append(s.Tools, cmdTool("where", 0, "sh", "-c", `pwd; echo "$SKILL_DIR"`))
	p := project(s)
	res, m, _, err := runWith(t, p, Options{RunsDir: t.TempDir()},
		read("ops"), call("where", nil), call("run_skill_script", map[string]string{"script": "scripts/where.sh"}), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	want := res.Workspace + "\n" + s.Dir + "\n"
	for i, name := range []string{"where", "run_skill_script"} {
		if got := lastResult(m.requests()[i+2]); got.Text != want {
			t.Errorf("%s answered %q, want %q", name, got.Text, want)
		}
	}
}

// A resume after a crash does not make a completed Write, Edit or Bash
// call again: the file changed behind the run's back stays as it is, and
// the Bash command's append is there once. It works in the same
// workspace, which run.json records.
func TestResumeDoesNotRepeatBuiltins(t *testing.T) {
	p := builtinProject()
	dir := crashedRun(t, p,
		call("Write", map[string]string{"file_path": "a.txt", "content": "written once\n"}),
		call("Bash", map[string]string{"command": "echo ran >> bash.log"}),
		call("Edit", map[string]string{"file_path": "a.txt", "old_string": "once", "new_string": "and edited"}),
		call("Read", map[string]string{"file_path": "a.txt"}))
	ws := filepath.Join(dir, "workspace")
	// A resume cannot be moved to another workspace.
	j, err := LoadReplay(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(p, Options{Model: answers, Resume: j, Workspace: t.TempDir()}); !errors.Is(err, ErrNotResumable) {
		t.Errorf("resume elsewhere: %v, want ErrNotResumable", err)
	}
	j.Close()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("changed since\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var read model.Message
	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		read = lastResult(req)
		return &model.Response{Text: "done"}, nil
	})
	res, _, err := resume(t, p, dir, m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Workspace != ws {
		t.Errorf("resumed in %q, want the run's workspace %q", res.Workspace, ws)
	}
	if got := string(readFile(t, filepath.Join(ws, "a.txt"))); got != "changed since\n" {
		t.Errorf("a.txt = %q: a completed Write or Edit ran again", got)
	}
	if got := string(readFile(t, filepath.Join(ws, "bash.log"))); got != "ran\n" {
		t.Errorf("bash.log = %q: a completed Bash call ran again", got)
	}
	// The Read's journaled answer stands: what the file held then.
	if read.Text != "     1\twritten and edited\n" {
		t.Errorf("the model read %q", read.Text)
	}
}

// Bash, Write and Edit follow the workflow's approve: policy; Read,
// Glob and Grep never ask.
func TestBuiltinApproval(t *testing.T) {
	testpar.UnlessRace(t)
	p := builtinProject()
	p.Workflow.Approve = spec.ApproveAlways
	_, m, evs, err := runWith(t, p, Options{RunsDir: t.TempDir(), Approve: approval.Deny},
		call("Write", map[string]string{"file_path": "a.txt", "content": "x"}),
		call("Glob", map[string]string{"pattern": "*"}),
		say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if got := lastResult(reqs[1]); !got.IsError || !strings.Contains(got.Text, "deny") {
		t.Errorf("Write under approve: always, denied: the model read %+v", got)
	}
	if got := lastResult(reqs[2]); got.IsError || !strings.Contains(got.Text, "No files match") {
		t.Errorf("Glob: the model read %+v", got)
	}
	ans := ofType(evs, event.ApprovalAnswered)
	if len(ans) != 1 || ans[0].Tool != "Write" || ans[0].By != "deny" {
		t.Errorf("approvals answered %+v, want Write's alone", ans)
	}
}

// The default worker gets the workflow's built-ins; an agent those of
// them it lists, and none the workflow does not offer.
func TestWorkerBuiltins(t *testing.T) {
	testpar.UnlessRace(t)
	s := skill("ops", "1.0.0", spec.ChannelInline)
	s.Agents = []spec.Agent{{Name: "writer", Prompt: "Write.", Tools: []string{"Write", "Bash", "ops_echo"}, Visibility: spec.VisibilitySub}}
	p := project(s)
	p.Workflow.Host = nil
	p.Workflow.Tools = []string{"Read", "Write"}
	p.Workflow.Limits.Concurrency = 1
	p.Workflow.Tasks = []spec.Task{{ID: "a", Goal: "default"}, {ID: "b", Goal: "agent", Assignee: "ops/writer", Deps: []string{"a"}}}
	res, m, _, err := runWith(t, p, Options{RunsDir: t.TempDir()},
		call("Write", map[string]string{"file_path": "a.txt", "content": "from the default worker"}), say("a done"),
		call("Write", map[string]string{"file_path": "b.txt", "content": "from the agent"}), say("b done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if got := toolNames(reqs[0]); !slices.Equal(got, []string{"Read", "Write"}) {
		t.Errorf("the default worker is offered %v", got)
	}
	if got := toolNames(reqs[2]); !slices.Equal(got, []string{"Write", "ops_echo"}) {
		t.Errorf("the agent is offered %v; want Write (Bash is not the workflow's) and its skill tool", got)
	}
	if want := "ops: " + absPath(s.Dir) + "\n"; !strings.Contains(reqs[2].Context, want) || strings.Contains(reqs[0].Context, "<skill_folders>") {
		t.Errorf("the agent is not told its skill's folder, or the default worker is told one:\n%s\n---\n%s", reqs[2].Context, reqs[0].Context)
	}
	for name, want := range map[string]string{"a.txt": "from the default worker", "b.txt": "from the agent"} {
		if got := string(readFile(t, filepath.Join(res.Workspace, name))); got != want {
			t.Errorf("%s = %q", name, got)
		}
	}
}

// A loaded, trusted skill's allowed-tools grants the built-in calls it
// names (Bash(echo *)); others still ask under approve: always.
func TestAllowedToolsGrantBuiltins(t *testing.T) {
	testpar.UnlessRace(t)
	s := skill("ops", "1.0.0", spec.ChannelInline)
	s.AllowedTools = []string{"Bash(echo *)", "Write(notes/**)"}
	p := builtinProject(s)
	p.Workflow.Approve = spec.ApproveAlways
	res, m, _, err := runWith(t, p, Options{RunsDir: t.TempDir(), ApprovalTimeout: time.Millisecond},
		read("ops"),
		call("Bash", map[string]string{"command": "echo granted"}),
		call("Bash", map[string]string{"command": "touch asked"}),
		call("Write", map[string]string{"file_path": "notes/a.md", "content": "granted"}),
		say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if want := "<skill_folders>\nops: " + absPath(s.Dir) + "\n</skill_folders>\n"; !strings.Contains(reqs[1].Context, want) {
		t.Errorf("the context block does not say where the loaded skill's files are:\n%s", reqs[1].Context)
	}
	if got := lastResult(reqs[2]); got.IsError || !strings.HasSuffix(got.Text, "granted\n") {
		t.Errorf("Bash(echo *) granted: the model read %+v", got)
	}
	if got := lastResult(reqs[3]); !got.IsError {
		t.Errorf("a command allowed-tools does not name ran without asking: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(res.Workspace, "asked")); err == nil {
		t.Error("the command that needed approval ran")
	}
	if got := lastResult(reqs[4]); got.IsError {
		t.Errorf("Write(notes/**) granted: the model read %+v", got)
	}
}

// With `workspace: .` in the project's folder the run records lie in the
// workspace: Write refuses them with a tool error, and a Bash program (in
// the sandbox) can neither read nor change them.
func TestRecordsInWorkspaceOutOfReach(t *testing.T) {
	testpar.UnlessRace(t)
	wfDir := t.TempDir()
	p := project()
	p.Workflow.Dir, p.Workflow.Workspace, p.Workflow.Tools = wfDir, ".", []string{"Write", "Bash"}
	runs := filepath.Join(wfDir, ".fsd", "runs")
	forged := filepath.Join(runs, "forged")
	_, m, _, err := runWith(t, p, Options{RunsDir: runs},
		call("Write", map[string]string{"file_path": ".fsd/runs/forged", "content": "x"}),
		call("Bash", map[string]string{"command": "echo x > .fsd/runs/forged; ls .fsd/runs"}),
		say("done"))
	if err != nil {
		t.Fatal(err)
	}
	if got := lastResult(m.requests()[1]); !got.IsError || !strings.Contains(got.Text, "the run records") {
		t.Errorf("Write: the model read %+v", got)
	}
	if got := lastResult(m.requests()[2]); !got.IsError {
		t.Errorf("Bash: the model read %+v, want an error", got)
	}
	if _, err := os.Stat(forged); err == nil {
		t.Error("a built-in tool wrote into the run records")
	}
}
