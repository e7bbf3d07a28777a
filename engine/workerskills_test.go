package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
)

// workerSkillsFiles is a project whose one task goes to an agent with
// skills: [style]: the worker reads style from its own catalog and calls
// the tool the load brings.
var workerSkillsFiles = map[string]string{
	"w.workflow.yaml": `name: w
model: scripted
script: w.script.yaml
skills: [./skills]
enabled: [team]
tasks:
  - {id: greet, assignee: team/writer, goal: Greet Ada}
`,
	"w.script.yaml": `agents:
  writer:
    - call: read_skill
      args: {id: style}
    - call: house_greeting
      args: {name: Ada}
    - say: '{{.Last}}'
`,
	"skills/team/team.skill.yaml": `id: team
name: Team
description: Writes greetings. Use for greetings.
version: 1.0.0
instructions: Delegate greetings to the writer.
agents:
  writer:
    prompt: Write the greeting in your task.
    skills: [style]
`,
	"skills/style/style.skill.yaml": `id: style
name: Style
description: The house style for greetings. Use before writing one.
version: 1.0.0
instructions: Greet with house_greeting.
tools:
  - name: house_greeting
    description: The house greeting for one person.
    input: {type: object, properties: {name: {type: string}}, required: [name]}
    run: {reply: "Bonjour, {{.name}}!"}
`,
}

// A worker whose agent lists skills: gets a catalog of those skills (and
// of no other: style is not enabled for the host), reads one with
// read_skill as the host does — a task event, the body in its context
// block — and calls the tool the load brings.
func TestWorkerReadsItsSkills(t *testing.T) {
	testpar.UnlessRace(t)
	dir := t.TempDir()
	for name, text := range workerSkillsFiles {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, rec, run := loadExample(t, filepath.Join(dir, "w.workflow.yaml"))
	res, err := run.Execute(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var evs []event.Event
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e event.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	if res.Answer != "Bonjour, Ada!" {
		t.Errorf("answer %q, want the skill tool's reply", res.Answer)
	}
	reqs := rec.reqs["greet"]
	if len(reqs) != 3 {
		t.Fatalf("%d worker requests, want 3", len(reqs))
	}
	first, second := reqs[0], reqs[1]
	if !strings.Contains(first.Context, "<catalog>") || !strings.Contains(first.Context, "The house style for greetings") {
		t.Errorf("the worker's first context has no catalog entry for style:\n%s", first.Context)
	}
	if strings.Contains(first.Context, "Greet with house_greeting") || strings.Contains(first.Context, "Delegate greetings") {
		t.Errorf("the first context carries a body or a skill outside the agent's list:\n%s", first.Context)
	}
	if !strings.Contains(second.Context, "Greet with house_greeting") {
		t.Errorf("after read_skill the worker's context lacks the loaded body:\n%s", second.Context)
	}
	names := func(i int) []string {
		var out []string
		for _, d := range reqs[i].Tools {
			out = append(out, d.Name)
		}
		return out
	}
	if got := names(0); !slices.Contains(got, "read_skill") || slices.Contains(got, "house_greeting") {
		t.Errorf("first request's tools %v: want read_skill, not yet house_greeting", got)
	}
	if got := names(1); !slices.Contains(got, "house_greeting") {
		t.Errorf("after the load the tools %v lack house_greeting", got)
	}
	loaded := false
	for _, e := range evs {
		if e.Type == event.SkillLoaded && e.Skill == "style" && e.Task == "greet" {
			loaded = true
		}
	}
	if !loaded {
		t.Error("no skill.loaded event for style in task greet")
	}
}

// A worker offered Read may read the files of the skills its agent
// loads through skills:, as the host reads its loaded skills'.
func TestWorkerReadsItsSkillsFiles(t *testing.T) {
	testpar.UnlessRace(t)
	dir := t.TempDir()
	files := map[string]string{}
	for name, text := range workerSkillsFiles {
		files[name] = text
	}
	files["w.workflow.yaml"] = strings.Replace(files["w.workflow.yaml"], "enabled: [team]\n", "enabled: [team]\ntools: [Read]\n", 1)
	files["skills/team/team.skill.yaml"] = strings.Replace(files["skills/team/team.skill.yaml"], "    skills: [style]\n", "    skills: [style]\n    tools: [Read]\n", 1)
	files["w.script.yaml"] = `agents:
  writer:
    - call: read_skill
      args: {id: style}
    - call: Read
      args: {file_path: '` + filepath.Join(dir, "skills", "style", "style.skill.yaml") + `', limit: 1}
    - say: '{{.Last}}'
`
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, _, run := loadExample(t, filepath.Join(dir, "w.workflow.yaml"))
	res, err := run.Execute(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Answer, "     1\tid: style\n") {
		t.Errorf("the worker read %q", res.Answer)
	}
}
