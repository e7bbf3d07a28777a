package main

import (
	"archive/zip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testbin"
)

// needPythonYAML skips a test that runs a public skill's Python scripts
// where python3 (as PATH finds it, as fsd will) cannot import yaml; under
// CI the test must run, so it fails there instead.
func needPythonYAML(t *testing.T) {
	t.Helper()
	testbin.PythonFirst()
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
// model: it Writes a new skill's SKILL.md into the workspace, runs the
// bundled quick_validate.py on it and `python -m scripts.package_skill
// <folder> <outdir>` through run_skill_script, and lists the archive with
// Bash; the .skill file is a zip holding that SKILL.md.
func TestPublicSkillCreatorPackagesASkill(t *testing.T) {
	t.Parallel() // it mostly waits for python3
	needPythonYAML(t)
	fixtures, err := filepath.Abs(filepath.Join("testdata", "public-skills"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, "workspace")
	skillMD := "---\nname: greeter\ndescription: Greets the user by name. Use when someone says hello.\n---\n# Greeter\n\nSay hello to the user by name.\n"
	content, err := json.Marshal(skillMD)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "w.script.yaml"), `host:
  - {call: read_skill, args: {id: skill-creator}}
  - {call: Write, args: {file_path: greeter/SKILL.md, content: `+string(content)+`}}
  - {call: run_skill_script, args: {skill: skill-creator, script: scripts/quick_validate.py, args: [greeter]}}
  - {call: run_skill_script, args: {skill: skill-creator, module: scripts.package_skill, args: [greeter, dist]}}
  - {call: Bash, args: {command: python3 -m zipfile -l dist/greeter.skill}}
  - say: packaged
`)
	wf := filepath.Join(dir, "w.workflow.yaml")
	write(t, wf, "name: w\nmodel: scripted\nscript: w.script.yaml\nskills: ["+fixtures+"]\ntools: [Write, Bash]\nhost: {prompt: hi}\ninput: package the greeter skill\n")

	code, out, errs := fsd(t, "run", wf, "--events", "json", "--runs-dir", filepath.Join(dir, "runs"), "--trust", fixtures, "--workspace", ws)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var results []event.Event
	for _, e := range events(t, out) {
		if e.Type == event.ToolResult && e.Tool != "read_skill" {
			results = append(results, e)
		}
	}
	if len(results) != 4 {
		t.Fatalf("%d tool results, want 4: %+v", len(results), results)
	}
	for i, want := range []string{"", "Skill is valid!", "Successfully packaged skill", "greeter/SKILL.md"} {
		if r := results[i]; r.Error || !strings.Contains(r.Result, want) {
			t.Errorf("%s: %+v, want a result with %q", r.Tool, r, want)
		}
	}

	zr, err := zip.OpenReader(filepath.Join(ws, "dist", "greeter.skill"))
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
