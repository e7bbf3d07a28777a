package scaffold

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"hello":             "hello",
		"a/b.workflow.yaml": "a/b.workflow.yaml",
		"my project":        "'my project'",
		"it's":              `'it'\''s'`,
		"":                  "''",
		"$HOME":             "'$HOME'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Next("my project", "hello"); got[0] != "fsd validate 'my project'" || got[2] != "fsd run 'my project/hello.workflow.yaml'" {
		t.Errorf("Next quotes badly: %q", got)
	}
}

func TestWriteNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	// One file of the template is there already, with the user's text.
	mine := filepath.Join(dir, "skills", "greeter", "greeter.skill.yaml")
	if err := os.MkdirAll(filepath.Dir(mine), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Write(dir, "hello")
	var ee *ExistsError
	if !errors.As(err, &ee) || len(ee.Paths) != 1 || ee.Paths[0] != mine {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "hello.workflow.yaml")); !os.IsNotExist(err) {
		t.Error("Write wrote a file although one was there")
	}
	if data, _ := os.ReadFile(mine); string(data) != "mine" {
		t.Errorf("overwritten: %q", data)
	}
}

func TestEveryTemplateHasOneWorkflow(t *testing.T) {
	for _, n := range Names {
		files, err := Files(n)
		if err != nil || len(files) < 3 {
			t.Fatalf("%s: %v %v", n, files, err)
		}
		if files[0] != Workflow(n) || Workflow(n) == "" || About(n) == "" {
			t.Errorf("%s: files %v, workflow %q", n, files, Workflow(n))
		}
	}
	if _, err := Files("nope"); err == nil {
		t.Error("an unknown template has files")
	}
}
