package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
)

// A SKILL.md's allowed-tools lets its script run without asking under the
// workflow's approve: always — the run needs nobody, and fsd show says
// which skill's entry let the call run.
func TestAllowedToolsRunWithoutAsking(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "skills", "notes", "SKILL.md"),
		"---\nname: notes\ndescription: Keeps notes.\nallowed-tools: Read, run_skill_script Bash(git diff:*)\n---\nRun scripts/note.sh.\n")
	script := filepath.Join(dir, "skills", "notes", "scripts", "note.sh")
	write(t, script, "#!/bin/sh\necho noted \"$@\"\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "w.script.yaml"), `host:
  - {call: read_skill, args: {id: notes}}
  - {call: run_skill_script, args: {skill: notes, script: scripts/note.sh, args: [today]}}
  - say: done
`)
	wf := filepath.Join(dir, "w.workflow.yaml")
	write(t, wf, "name: w\nmodel: scripted\nscript: w.script.yaml\nskills: [skills]\napprove: always\nhost: {prompt: hi}\ninput: go\n")
	runs := filepath.Join(dir, "runs")

	code, out, errs := fsd(t, "run", wf, "--events", "json", "--runs-dir", runs)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var id string
	var granted []event.Event
	for _, e := range events(t, out) {
		id = e.Run
		switch e.Type {
		case event.ApprovalRequested:
			t.Errorf("a person was asked: %+v", e)
		case event.ApprovalGranted:
			granted = append(granted, e)
		}
	}
	if len(granted) != 1 || granted[0].Skill != "notes" || granted[0].Reason != "run_skill_script" {
		t.Fatalf("granted events %+v", granted)
	}
	if r, ok := toolResult(events(t, out), "run_skill_script"); !ok || r.Error || !strings.Contains(r.Result, "noted today") {
		t.Errorf("the script's result: %+v", r)
	}

	code, out, errs = fsd(t, "show", id, "--runs-dir", runs)
	if code != exitOK {
		t.Fatalf("show: exit %d: %s", code, errs)
	}
	want := "ran without asking (1)\n  host/s2/c1 run_skill_script "
	if !strings.Contains(out, want) || !strings.Contains(out, ": allowed by skill notes's allowed-tools (run_skill_script)\n") {
		t.Errorf("fsd show lacks %q and the grant:\n%s", want, out)
	}
}
