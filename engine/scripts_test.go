package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/testbin"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/spec"
)

// run_skill_script is offered while a loaded skill has scripts/, runs the
// script there, and refuses an untrusted skill's with the --trust hint.
func TestRunSkillScript(t *testing.T) {
	testpar.UnlessRace(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "hi.sh"), []byte("echo hi \"$1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withScripts := &spec.Skill{ID: "field", Name: "field", Description: "d", Instructions: "Run scripts/hi.sh NAME.",
		Dir: dir, Resources: []string{"scripts/hi.sh"}}
	plain := skill("plain", "1.0.0", spec.ChannelHandle)
	for _, tc := range []struct {
		name    string
		trusted bool
		want    string
	}{
		{"trusted", true, "hi there"},
		{"untrusted", false, "--trust " + dir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Trusted: func(s *spec.Skill) bool { return tc.trusted }}
			_, m, _, err := runWith(t, project(withScripts, plain), opts,
				read("plain"), read("field"),
				call("run_skill_script", map[string]any{"script": "scripts/hi.sh", "args": []string{"there"}}),
				say("done"))
			if err != nil {
				t.Fatal(err)
			}
			reqs := m.requests()
			if has(toolNames(reqs[1]), "run_skill_script") {
				t.Error("offered while no loaded skill has scripts")
			}
			if !has(toolNames(reqs[2]), "run_skill_script") {
				t.Error("not offered while a skill with scripts is loaded")
			}
			res := lastResult(reqs[3])
			if !strings.Contains(res.Text, tc.want) || res.IsError == tc.trusted {
				t.Errorf("result %+v, want %q", res, tc.want)
			}
		})
	}
}

// A Python module runs from the "module" argument, and from "-m name"
// given as the script, as a model reading "python -m scripts.x" may put it.
func TestRunSkillScriptModule(t *testing.T) {
	testpar.UnlessRace(t)
	testbin.PythonFirst()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "pack.py"), []byte("import sys\nprint('packed', sys.argv[1])\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &spec.Skill{ID: "creator", Name: "creator", Description: "d", Instructions: "Run python -m scripts.pack DIR.",
		Dir: dir, Resources: []string{"scripts/pack.py"}}
	for _, args := range []map[string]any{
		{"module": "scripts.pack", "args": []string{"out"}},
		{"script": "-m scripts.pack", "args": []string{"out"}},
	} {
		opts := Options{Trusted: func(*spec.Skill) bool { return true }}
		_, m, _, err := runWith(t, project(s), opts, read("creator"), call("run_skill_script", args), say("done"))
		if err != nil {
			t.Fatal(err)
		}
		if res := lastResult(m.requests()[2]); res.IsError || res.Text != "packed out\n" {
			t.Errorf("%v: result %+v", args, res)
		}
	}
}

// An argument run_skill_script does not take (its schema allows none
// besides its own) is an error the model reads, not one silently dropped:
// a "timeout" the model set must not run the script as if it had been taken.
func TestRunSkillScriptUnknownArgument(t *testing.T) {
	testpar.UnlessRace(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "hi.sh"), []byte("echo ran\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withScripts := &spec.Skill{ID: "field", Name: "field", Description: "d", Instructions: "Run scripts/hi.sh.",
		Dir: dir, Resources: []string{"scripts/hi.sh"}}
	opts := Options{Trusted: func(*spec.Skill) bool { return true }}
	_, m, _, err := runWith(t, project(withScripts), opts, read("field"),
		call("run_skill_script", map[string]any{"script": "scripts/hi.sh", "timeout": 1000}),
		say("done"))
	if err != nil {
		t.Fatal(err)
	}
	res := lastResult(m.requests()[2])
	if !res.IsError || !strings.Contains(res.Text, "unknown field") || !strings.Contains(res.Text, "timeout") {
		t.Errorf("result %+v, want an error naming timeout and no run", res)
	}
}
