package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/sandbox"
)

// fsd run -v prints, before the run, what confines each skill's programs:
// one line per skill with programs, one more for a tool whose own setting
// changes it, none for a skill without programs; with sandbox: off, that
// they run unconfined.
func TestRunVerboseSaysTheSandbox(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"skills/ops", "skills/plain"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, "skills", "ops", "ops.skill.yaml"), `id: ops
name: Ops
description: Runs things.
version: 1.0.0
instructions: Run things.
sandbox: {network: on}
tools:
  - name: status
    run: {command: ["true"]}
  - name: fetch
    run: {command: ["true"], sandbox: {max-procs: 8}}
`)
	write(t, filepath.Join(dir, "skills", "plain", "plain.skill.yaml"), `id: plain
name: Plain
description: Says things.
version: 1.0.0
instructions: Say things.
tools:
  - name: hello
    run: {reply: hi}
`)
	write(t, filepath.Join(dir, "s.script.yaml"), "host:\n  - say: done\n")
	wf := filepath.Join(dir, "s.workflow.yaml")
	const base = "name: s\nmodel: scripted\nscript: s.script.yaml\nskills: [./skills]\nhost: {prompt: p}\ninput: go\n"
	write(t, wf, base)
	code, _, errs := fsd(t, "run", wf, "-v", "--runs-dir", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var lines []string
	for _, l := range strings.Split(errs, "\n") {
		if strings.Contains(l, "sandbox:") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 || !strings.Contains(lines[0], "skill=ops") || strings.Contains(lines[0], "tool=") ||
		!strings.Contains(lines[1], "tool=fetch") || strings.Contains(errs, "skill=plain") {
		t.Fatalf("stderr's sandbox lines:\n%s\nwant one for ops and one for its tool fetch:\n%s", strings.Join(lines, "\n"), errs)
	}
	if _, err := sandbox.Backend(); err == nil && (!strings.Contains(lines[0], "network on") || !strings.Contains(lines[1], "max procs 8")) {
		t.Errorf("the lines do not say the network and the bound:\n%s", strings.Join(lines, "\n"))
	}

	write(t, wf, base+"sandbox: off\n")
	if code, _, errs = fsd(t, "run", wf, "-v", "--runs-dir", t.TempDir()); code != exitOK || !strings.Contains(errs, "unconfined") {
		t.Errorf("sandbox: off: exit %d, stderr:\n%s", code, errs)
	}
}

// A denied write's explanation is the call's result in the record: fsd
// show --requests shows it where the model read it.
func TestSandboxDenialInShow(t *testing.T) {
	t.Parallel()
	if _, err := sandbox.Backend(); err != nil {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	dir := t.TempDir()
	skill := filepath.Join(dir, "skills", "ops")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(skill, "ops.skill.yaml"), `id: ops
name: Ops
description: Runs things.
version: 1.0.0
instructions: Run things.
tools:
  - name: escape
    run: {command: [sh, -c, "echo x > `+filepath.Join(skill, "out.txt")+`"]}
`)
	write(t, filepath.Join(dir, "s.script.yaml"), "host:\n  - call: read_skill\n    args: {id: ops}\n  - call: escape\n  - say: done\n")
	wf := filepath.Join(dir, "s.workflow.yaml")
	write(t, wf, "name: s\nmodel: scripted\nscript: s.script.yaml\nskills: [./skills]\nhost: {prompt: p}\ninput: go\n")
	runs := t.TempDir()
	if code, _, errs := fsd(t, "run", wf, "--runs-dir", runs); code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	ids, _ := os.ReadDir(runs)
	if len(ids) != 1 {
		t.Fatalf("%d runs", len(ids))
	}
	_, out, _ := fsd(t, "show", "--runs-dir", runs, "--requests", ids[0].Name())
	if !strings.Contains(out, "exited with status") || !strings.Contains(out, "The sandbox lets programs write only in the workspace") || !strings.Contains(out, "sandbox: {write: ["+skill+"]}") {
		t.Errorf("fsd show --requests lacks the denial's explanation:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(skill, "out.txt")); err == nil {
		t.Error("the sandboxed command wrote outside the workspace")
	}
}
