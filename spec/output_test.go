package spec

import (
	"os"
	"path/filepath"
	"testing"
)

// output: inline or as a file inside the skill; output-repairs read;
// Repairs defaults to DefaultOutputRepairs.
func TestLoadAgentOutput(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "schemas"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "schemas", "count.json"), []byte(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	manifest := `id: typed
name: Typed
description: Agents with typed results.
version: 1.0.0
agents:
  inline:
    output:
      type: object
      required: [total]
      properties:
        total: {type: integer, minimum: 0}
    output-repairs: 0
  file:
    output: schemas/count.json
  text: {}
`
	path := filepath.Join(dir, "typed.skill.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	s, diags := LoadSkill(path)
	if len(diags) != 0 {
		t.Fatalf("diagnostics: %v", diags)
	}
	in, _ := s.Agent("inline")
	if in.Output["type"] != "object" || in.OutputFile != "" || in.Repairs() != 0 {
		t.Errorf("inline: output %v file %q repairs %d", in.Output, in.OutputFile, in.Repairs())
	}
	f, _ := s.Agent("file")
	if f.Output["required"] == nil || f.OutputFile != "schemas/count.json" || f.Repairs() != DefaultOutputRepairs {
		t.Errorf("file: output %v file %q repairs %d", f.Output, f.OutputFile, f.Repairs())
	}
	if txt, _ := s.Agent("text"); txt.Output != nil {
		t.Errorf("text agent has output %v", txt.Output)
	}
}
