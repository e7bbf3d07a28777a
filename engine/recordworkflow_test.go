package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsdrun/fsd/internal/testpar"
)

// The record keeps the workflow file's bytes as read, comments and all,
// and the resolved values as JSON: defaults filled, skills found.
func TestRecordKeepsWorkflowBytes(t *testing.T) {
	testpar.UnlessRace(t)
	const path = "../examples/fanout/fanout.workflow.yaml"
	_, _, run := loadExample(t, path)
	res, err := run.Execute(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	src, _ := os.ReadFile(path)
	got, err := os.ReadFile(filepath.Join(res.Dir, "workflow.yaml"))
	if err != nil || !bytes.Equal(got, src) {
		t.Errorf("workflow.yaml in the record is not the file as read (err %v)", err)
	}
	var resolved struct {
		Limits struct {
			Concurrency int `json:"concurrency"`
			MaxSteps    int `json:"max-steps"`
		} `json:"limits"`
		Skills []struct{ ID, Version string } `json:"skills-found"`
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "resolved.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &resolved); err != nil {
		t.Fatal(err)
	}
	if resolved.Limits.Concurrency != 4 || resolved.Limits.MaxSteps == 0 || len(resolved.Skills) != 1 || resolved.Skills[0].ID != "market-research" {
		t.Errorf("resolved.json = %s", b)
	}
}

// Without Options.Redact the engine cannot tell which of the workflow's
// board: settings hold secrets (they are a transport's), so the record
// keeps none of them: resolved.json has no board, and the workflow's file
// is not copied.
func TestRecordWithoutRedactKeepsNoBoard(t *testing.T) {
	testpar.UnlessRace(t)
	dir := t.TempDir()
	wf := filepath.Join(dir, "remote.workflow.yaml")
	src := "name: remote\nmodel: scripted\nscript: s.script.yaml\nboard: {nats: \"nats://fsd:s3cret@localhost:4222\"}\nhost: {prompt: hi}\ninput: go\n"
	if err := os.WriteFile(wf, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "s.script.yaml"), []byte("host:\n  - say: done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, run := loadExample(t, wf)
	res, err := run.Execute(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, "workflow.yaml")); !os.IsNotExist(err) {
		t.Errorf("the record copied the workflow's file (err %v)", err)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "resolved.json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("s3cret")) || bytes.Contains(b, []byte(`"board"`)) {
		t.Errorf("resolved.json keeps the board: %s", b)
	}
	if !bytes.Contains(b, []byte(`"name":"remote"`)) {
		t.Errorf("resolved.json lacks the workflow: %s", b)
	}
}
