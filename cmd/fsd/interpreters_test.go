package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/spec"
)

// fsd run -v names each script whose interpreter this machine lacks, and
// only those.
func TestMissingInterpreters(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"scripts/a.py":      "print('a')\n",
		"scripts/b":         "#!/no/such/interpreter\n",
		"scripts/c":         "#!/usr/bin/env fsd-no-such-interpreter\n",
		"scripts/d.xsd":     "<xs:schema/>\n",
		"scripts/e":         "#!/bin/sh\necho e\n",
		"templates/f.py":    "print('f')\n",
		"scripts/sub/g.txt": "data\n",
	}
	s := &spec.Skill{ID: "tools", Dir: dir}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		s.Resources = append(s.Resources, name)
	}
	t.Setenv("PATH", t.TempDir()) // no python3 here
	got := strings.Join(missingInterpreters(&spec.Project{Skills: []*spec.Skill{s}}), "\n")
	for _, want := range []string{
		"skill tools: scripts/a.py needs python3, which is not on this machine's PATH",
		"scripts/b needs /no/such/interpreter",
		"scripts/c needs fsd-no-such-interpreter",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("notes %q lack %q", got, want)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != 3 {
		t.Errorf("%d notes, want 3: %q", n, got)
	}
}
