package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The record keeps the workflow file's bytes as read, comments and all,
// and the resolved values as JSON: defaults filled, skills found.
func TestRecordKeepsWorkflowBytes(t *testing.T) {
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
