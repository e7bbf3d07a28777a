package main

import (
	"archive/zip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
)

// needPythonYAML skips a test that runs a public skill's Python scripts
// where python3 (as PATH finds it, as fsd will) cannot import yaml; under
// CI the test must run, so it fails there instead.
func needPythonYAML(t *testing.T) {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import yaml").CombinedOutput()
	if err == nil {
		return
	}
	msg := "python3 with PyYAML is needed to run skill-creator's scripts: " + strings.TrimSpace(string(out)) + " " + err.Error()
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Anthropic's public skill-creator, unchanged (testdata/public-skills),
// driven through its documented packaging workflow by the scripted
// model: a new skill's SKILL.md is in the workspace, the model runs the
// bundled quick_validate.py on it and then `python -m
// scripts.package_skill <folder> <outdir>` through run_skill_script, and
// the .skill file it produces is a zip holding that SKILL.md.
func TestPublicSkillCreatorPackagesASkill(t *testing.T) {
	needPythonYAML(t)
	fixtures, err := filepath.Abs(filepath.Join("testdata", "public-skills"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, "workspace")
	newSkill := filepath.Join(ws, "greeter")
	dist := filepath.Join(ws, "dist")
	skillMD := "---\nname: greeter\ndescription: Greets the user by name. Use when someone says hello.\n---\n# Greeter\n\nSay hello to the user by name.\n"
	// What the model's Write call does once the built-in tools are there.
	write(t, filepath.Join(newSkill, "SKILL.md"), skillMD)
	if err := os.MkdirAll(dist, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "w.script.yaml"), `host:
  - {call: read_skill, args: {id: skill-creator}}
  - {call: run_skill_script, args: {skill: skill-creator, script: scripts/quick_validate.py, args: [`+newSkill+`]}}
  - {call: run_skill_script, args: {skill: skill-creator, module: scripts.package_skill, args: [`+newSkill+`, `+dist+`]}}
  - say: packaged
`)
	wf := filepath.Join(dir, "w.workflow.yaml")
	write(t, wf, "name: w\nmodel: scripted\nscript: w.script.yaml\nskills: ["+fixtures+"]\nhost: {prompt: hi}\ninput: package the greeter skill\n")

	code, out, errs := fsd(t, "run", wf, "--events", "json", "--runs-dir", filepath.Join(dir, "runs"), "--trust", fixtures)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var results []event.Event
	for _, e := range events(t, out) {
		if e.Type == event.ToolResult && e.Tool == "run_skill_script" {
			results = append(results, e)
		}
	}
	if len(results) != 2 {
		t.Fatalf("%d script results, want 2", len(results))
	}
	if r := results[0]; r.Error || !strings.Contains(r.Result, "Skill is valid!") {
		t.Errorf("quick_validate.py: %+v", r)
	}
	if r := results[1]; r.Error || !strings.Contains(r.Result, "Successfully packaged skill") {
		t.Errorf("package_skill: %+v", r)
	}

	zr, err := zip.OpenReader(filepath.Join(dist, "greeter.skill"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if f.Name != "greeter/SKILL.md" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != skillMD {
			t.Errorf("the packaged SKILL.md is\n%s\nwant\n%s", b, skillMD)
		}
	}
	if strings.Join(names, ",") != "greeter/SKILL.md" {
		t.Errorf("greeter.skill holds %q, want only greeter/SKILL.md", names)
	}
}
