package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
)

// A typed pipeline end to end with the scripted model: validate passes,
// the collector's wrong first answer is repaired, the report's goal and
// script reach the collector's fields, and the record and `fsd show`
// keep the JSON as JSON.
func TestTypedWorkflow(t *testing.T) {
	wf := filepath.Join("testdata", "typed", "typed.workflow.yaml")
	if code, out, errs := fsd(t, "validate", filepath.Join("testdata", "typed")); code != exitOK {
		t.Fatalf("validate: exit %d\n%s%s", code, out, errs)
	}
	runs := t.TempDir()
	code, out, errs := fsd(t, "run", wf, "--runs-dir", runs)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	if want := "Write a note on the 3 open items: 3, first a.\n"; out != want {
		t.Errorf("answer %q, want %q", out, want)
	}
	dirs, _ := os.ReadDir(runs)
	rec := filepath.Join(runs, dirs[0].Name())

	// The repair turn is in the journal.
	tr, err := os.ReadFile(filepath.Join(rec, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tr), "at /total: got string, want integer") {
		t.Errorf("no repair message in the journal:\n%s", tr)
	}
	// events.jsonl: task.completed carries the JSON value.
	f, err := os.Open(filepath.Join(rec, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	found := false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatal(err)
		}
		var e event.Event
		_ = json.Unmarshal(sc.Bytes(), &e)
		if e.Type == event.TaskCompleted && e.Task == "collect" {
			found = true
			if string(raw["output"]) != `{"total":3,"items":["a","b","c"]}` || raw["result"] != nil {
				t.Errorf("task.completed: %s", sc.Bytes())
			}
		}
	}
	if !found {
		t.Error("no task.completed for collect")
	}

	code, out, _ = fsd(t, "show", dirs[0].Name(), "--runs-dir", runs)
	if code != exitOK || !strings.Contains(out, "\noutput of collect\n  {\"total\":3,\"items\":[\"a\",\"b\",\"c\"]}\n") {
		t.Errorf("show:\n%s", out)
	}
	code, out, _ = fsd(t, "show", dirs[0].Name(), "--runs-dir", runs, "--format", "json")
	var d struct {
		Tasks []map[string]json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(out), &d); code != exitOK || err != nil {
		t.Fatalf("show --format json: %v\n%s", err, out)
	}
	var total struct{ Total int }
	if err := json.Unmarshal(d.Tasks[0]["output"], &total); err != nil || total.Total != 3 {
		t.Errorf("show --format json output of collect: %s", d.Tasks[0]["output"])
	}
}

// A broken output schema fails validate with its position.
func TestValidateBadOutputSchema(t *testing.T) {
	dir := t.TempDir()
	skill := filepath.Join(dir, "skills", "stats")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := "id: stats\nname: Stats\ndescription: Counts.\nversion: 1.0.0\nagents:\n  collector:\n    output:\n      type: object\n      properties:\n        total: {type: integr}\n"
	if err := os.WriteFile(filepath.Join(skill, "stats.skill.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := fsd(t, "validate", dir)
	want := filepath.Join(skill, "stats.skill.yaml") + `:10:23: agent "collector": output schema: not a valid JSON Schema: value must be one of`
	if code != exitProblems || !strings.Contains(out+errs, want) {
		t.Errorf("exit %d, want %d and %q:\n%s%s", code, exitProblems, want, out, errs)
	}

	// In a schema file, a $ref that leaves the schema is reported at the
	// $ref's own line and column, not at the file's first line.
	manifest = "id: stats\nname: Stats\ndescription: Counts.\nversion: 1.0.0\nagents:\n  collector:\n    output: out.schema.yaml\n"
	write(t, filepath.Join(skill, "stats.skill.yaml"), manifest)
	write(t, filepath.Join(skill, "out.schema.yaml"), "type: object\nproperties:\n  total:\n    type: integer\n  items:\n    $ref: defs.json#/items\n")
	code, out, errs = fsd(t, "validate", dir)
	want = filepath.Join(skill, "out.schema.yaml") + `:6:11: agent "collector": output schema: an output schema cannot refer to defs.json`
	if code != exitProblems || !strings.Contains(out+errs, want) {
		t.Errorf("exit %d, want %d and %q:\n%s%s", code, exitProblems, want, out, errs)
	}
}

// A task whose repairs run out fails the run with the violations, which
// span lines in the task's error: the CLI still prints them as its one
// `fsd:` line on stderr, all of them, not a first line and loose "- at …"
// lines after it.
func TestTypedFailureIsOneErrorLine(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "typed"), dir)
	write(t, filepath.Join(dir, "typed.script.yaml"), `agents:
  collector:
    - say: '{"total": "three", "items": ["a", "b", "c"]}'
    - say: '{"total": "three", "items": [1]}'
    - say: '{"total": "three", "items": [1]}'
  reporter:
    - say: never
`)
	code, _, errs := fsd(t, "run", filepath.Join(dir, "typed.workflow.yaml"), "--runs-dir", t.TempDir())
	if code != exitProblems {
		t.Fatalf("exit %d, want %d\n%s", code, exitProblems, errs)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(errs), "\n") {
		if strings.HasPrefix(l, "fsd: ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.HasSuffix(strings.TrimSpace(errs), lines[0]) || !strings.Contains(lines[0], "(after 2 repair turns): - at /items/0: got number, want string; - at /total: got string, want integer; task report stranded") ||
		!strings.Contains(lines[0], "(record: ") {
		t.Errorf("the error is not one whole line:\n%s", strings.Join(lines, "\n"))
	}
}
