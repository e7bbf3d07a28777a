package engine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/internal/sandbox"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/spec"
)

// noSandbox is a machine where no sandbox can be had.
func noSandbox(*exec.Cmd, sandbox.Policy) (func(), error) {
	return nil, fmt.Errorf("%w: tests asked for none; install bubblewrap, or set `sandbox: off` in the workflow", sandbox.ErrUnavailable)
}

// touchSkill is a skill whose command tool "touch" creates marker.
func touchSkill(marker string) *spec.Skill {
	s := skill("ops", "1.0.0", spec.ChannelInline)
	s.Tools = append(s.Tools, spec.Tool{Name: "touch", Run: spec.ToolRun{Kind: spec.RunCommand, Command: []string{"touch", marker}}})
	return s
}

// Where no sandbox can be had, a skill's programs do not run: each call
// answers the model a tool error naming the fixes, and the log says it
// once. The workflow's `sandbox: off` runs them unconfined.
func TestRunWithoutSandbox(t *testing.T) {
	testpar.UnlessRace(t)
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("sandbox off %v", off), func(t *testing.T) {
			dir := t.TempDir()
			marker := filepath.Join(dir, "ran")
			p := writable(project(touchSkill(marker)), dir)
			if off {
				p.Workflow.Sandbox = &spec.Sandbox{Off: true}
			}
			var logs bytes.Buffer
			_, m, _, err := runWith(t, p, Options{wrap: noSandbox, Logger: zerolog.New(&logs)},
				read("ops"), call("touch", nil), call("touch", nil), say("done"))
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(marker)
			reqs := m.requests()
			if off {
				if statErr != nil || lastResult(reqs[2]).IsError {
					t.Errorf("sandbox: off did not run the program: %v, %+v", statErr, lastResult(reqs[2]))
				}
				return
			}
			if !errors.Is(statErr, os.ErrNotExist) {
				t.Fatalf("a program ran without a sandbox: %v", statErr)
			}
			for _, req := range reqs[2:4] {
				if r := lastResult(req); !r.IsError || !strings.Contains(r.Text, "did not run: no sandbox is available") || !strings.Contains(r.Text, "`sandbox: off`") {
					t.Errorf("the model read %+v, want the sandbox's error", r)
				}
			}
			if n := strings.Count(logs.String(), "skills' programs do not run"); n != 1 || !strings.Contains(logs.String(), "install bubblewrap") {
				t.Errorf("the log says it %d times, want once with the fixes:\n%s", n, logs.String())
			}
		})
	}
}

// A run whose skills start no programs never asks for a sandbox: it runs
// where none can be had, and -v describes none.
func TestRunWithoutProgramsNeedsNoSandbox(t *testing.T) {
	testpar.UnlessRace(t)
	var logs bytes.Buffer
	res, _, _, err := runWith(t, project(skill("ops", "1.0.0", spec.ChannelInline)), Options{wrap: noSandbox, Logger: zerolog.New(&logs)},
		read("ops"), call("ops_echo", map[string]string{"text": "hi"}), say("done"))
	if err != nil || res.Answer != "done" {
		t.Fatalf("run: %v, %+v", err, res)
	}
	if strings.Contains(logs.String(), "sandbox") {
		t.Errorf("the log speaks of a sandbox:\n%s", logs.String())
	}
}

// fsd run -v: each skill with programs gets a line saying what confines
// them, and a program whose own setting changes it gets its own.
func TestDescribeSandboxes(t *testing.T) {
	testpar.UnlessRace(t)
	s := touchSkill("/nonexistent")
	s.Tools = append(s.Tools, spec.Tool{Name: "fetch", Run: spec.ToolRun{Kind: spec.RunCommand, Command: []string{"true"},
		Sandbox: &spec.Sandbox{MaxProcs: 8}}})
	plain := skill("plain", "1.0.0", spec.ChannelInline)
	var logs bytes.Buffer
	tb := &toolbox{workflow: &spec.Workflow{Sandbox: &spec.Sandbox{Network: sandbox.NetOn}}}
	tb.describeSandboxes([]*spec.Skill{s, plain}, zerolog.New(&logs).Level(zerolog.InfoLevel))
	got := logs.String()
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"skill":"ops"`) || strings.Contains(lines[0], `"tool"`) ||
		!strings.Contains(lines[1], `"tool":"fetch"`) || strings.Contains(got, "plain") {
		t.Fatalf("logged:\n%s\nwant one line for ops and one for its tool fetch", got)
	}
	if _, err := sandbox.Backend(); err == nil && (!strings.Contains(lines[0], "network on") || !strings.Contains(lines[1], "max procs 8")) {
		t.Errorf("the lines do not say the network and the bound:\n%s", got)
	}
	logs.Reset()
	tb.workflow.Sandbox = &spec.Sandbox{Off: true}
	tb.describeSandboxes([]*spec.Skill{s}, zerolog.New(&logs).Level(zerolog.InfoLevel))
	if !strings.Contains(logs.String(), "unconfined") {
		t.Errorf("sandbox: off logged %q", logs.String())
	}
	logs.Reset()
	tb.describeSandboxes([]*spec.Skill{s}, zerolog.New(&logs).Level(zerolog.WarnLevel))
	if logs.Len() != 0 {
		t.Errorf("without -v: %q", logs.String())
	}
}

// Through a whole run: a command tool that writes outside what the
// sandbox allows is denied, nothing is written, and the model's result
// says which setting allows it.
func TestSandboxEscapeThroughAWorkflow(t *testing.T) {
	testpar.UnlessRace(t)
	if _, err := sandbox.Backend(); err != nil {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	dir := t.TempDir()
	outside := filepath.Join(dir, "escaped")
	s := touchSkill(outside)
	s.Dir = dir // readable, not writable
	_, m, _, err := runWith(t, project(s), Options{}, read("ops"), call("touch", nil), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the program wrote %s: %v", outside, err)
	}
	r := lastResult(m.requests()[2])
	if !r.IsError || !strings.Contains(r.Text, "exited with status") || !strings.Contains(r.Text, "sandbox: {write: [") {
		t.Errorf("the model read %+v, want the exit status and the setting that allows the write", r)
	}
}

// Bash runs in the workflow's sandbox: it writes in the workspace, runs a
// loaded skill's script from its folder, and is denied a write outside,
// with the setting that allows it in its result.
func TestBashSandboxed(t *testing.T) {
	testpar.UnlessRace(t)
	if _, err := sandbox.Backend(); err != nil {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "hi.sh"), []byte("echo hi from the skill\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := skill("ops", "1.0.0", spec.ChannelInline)
	s.Dir = dir
	outside := filepath.Join(dir, "escaped")
	ws := t.TempDir()
	p := builtinProject(s)
	_, m, _, err := runWith(t, p, Options{Workspace: ws}, read("ops"),
		call("Bash", map[string]string{"command": "sh " + filepath.Join(dir, "scripts", "hi.sh") + " && echo kept > kept.txt"}),
		call("Bash", map[string]string{"command": "echo x > " + outside}),
		say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if r := lastResult(reqs[2]); r.IsError || !strings.Contains(r.Text, "hi from the skill") {
		t.Errorf("the skill's script through Bash: %+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "kept.txt")); err != nil || string(b) != "kept\n" {
		t.Errorf("the workspace write: %q, %v", b, err)
	}
	if r := lastResult(reqs[3]); !r.IsError || !strings.Contains(r.Text, "sandbox: {write: [") {
		t.Errorf("the write outside: %+v, want the setting that allows it", r)
	}
	if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Bash wrote %s: %v", outside, err)
	}
}
