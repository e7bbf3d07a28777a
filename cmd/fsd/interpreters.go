package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/fsdrun/fsd/internal/proc"
	"github.com/fsdrun/fsd/spec"
)

// missingInterpreters are notes for `fsd run -v`: each script of a skill
// whose interpreter (from its #! line or extension) is not on this
// machine. It is a note and not a validate warning because it is a fact
// of the machine, not of the skill: the same skill validates alike in CI
// and on a laptop. Files that cannot start at all are validate's
// warning, and are not repeated here.
func missingInterpreters(p *spec.Project) []string {
	var notes []string
	for _, s := range p.Skills {
		for _, rel := range s.Resources {
			if !strings.HasPrefix(rel, "scripts/") {
				continue
			}
			path := filepath.Join(s.Dir, filepath.FromSlash(rel))
			argv, problem := proc.ScriptArgv(path)
			if problem != "" || len(argv) < 2 {
				continue // cannot start, or starts itself
			}
			interp := argv[0]
			if filepath.Base(interp) == "env" && len(argv) > 2 && !strings.HasPrefix(argv[1], "-") {
				interp = argv[1] // #!/usr/bin/env python3
			}
			if found(interp) {
				continue
			}
			notes = append(notes, fmt.Sprintf("skill %s: %s needs %s, which is not on this machine's PATH; run_skill_script will fail on it", s.ID, rel, interp))
		}
	}
	return notes
}

// found reports whether program can be started: an existing file when it
// is a path, else a name on PATH.
func found(program string) bool {
	if strings.ContainsRune(program, '/') {
		_, err := os.Stat(program)
		return err == nil
	}
	_, err := exec.LookPath(program)
	return err == nil
}
