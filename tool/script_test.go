package tool

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/testbin"
)

// scriptSkill makes a skill folder with scripts and a file outside it.
func scriptSkill(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "skill")
	files := map[string]struct {
		body string
		mode os.FileMode
	}{
		"scripts/exec.sh":     {"#!/bin/sh\necho exec: \"$@\"\n", 0o755},
		"scripts/plain.sh":    {"echo plain: \"$1\" \"$2\"\n", 0o644},
		"scripts/bang":        {"#!/bin/sh\necho bang: \"$@\"\n", 0o644},
		"scripts/env.sh":      {"echo \"secret=${FSD_TEST_SECRET:-none} call=$FSD_CALL_ID\"\n", 0o644},
		"scripts/fail.sh":     {"echo out; echo oops >&2; exit 3\n", 0o644},
		"scripts/data.bin":    {"\x00\x01", 0o644},
		"scripts/nobang.sh":   {"echo nobang: \"$@\"\n", 0o755},
		"scripts/nobang":      {"echo nobang\n", 0o755},
		"scripts/sub/deep.sh": {"echo deep\n", 0o644},
		"notes.md":            {"# not a script\n", 0o644},
		"../outside.sh":       {"echo escaped\n", 0o755},
	}
	for name, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.body), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(base, "outside.sh"), filepath.Join(dir, "scripts", "link.sh")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRunScript(t *testing.T) {
	dir := scriptSkill(t)
	t.Setenv("FSD_TEST_SECRET", "sk-should-not-leak")
	for _, tc := range []struct {
		name, script string
		args         []string
		want         string // substring of the result
		isErr        bool
	}{
		{"executable", "scripts/exec.sh", []string{"a b", "$(echo no-shell)"}, "exec: a b $(echo no-shell)", false},
		{"extension picks sh", "scripts/plain.sh", []string{"x", "y"}, "plain: x y", false},
		{"#! line", "scripts/bang", []string{"z"}, "bang: z", false},
		{"nested", "./scripts/sub/deep.sh", nil, "deep", false},
		{"minimal environment", "scripts/env.sh", nil, "secret=none call=c-1", false},
		{"failure keeps status and stderr", "scripts/fail.sh", nil, "exited with status 3\nstderr (last 4 KiB):\noops", true},
		{"no interpreter", "scripts/data.bin", nil, "data.bin cannot be started: it has no #! line", true},
		{"executable without #! runs by extension", "scripts/nobang.sh", []string{"q"}, "nobang: q", false},
		{"executable without #! or extension", "scripts/nobang", nil, "add a #! line (such as #!/usr/bin/env python3) or give it a known extension (.bash,", true},
		{"missing", "scripts/nope.sh", nil, `no script "scripts/nope.sh"`, true},
		{"not under scripts", "notes.md", nil, "not under the skill's scripts/ folder", true},
		{"dot-dot", "scripts/../../outside.sh", nil, "leaves the skill's folder", true},
		{"absolute", filepath.Join(dir, "scripts", "exec.sh"), nil, "is absolute", true},
		{"symlink out", "scripts/link.sh", nil, "symlink that leads outside", true},
		{"folder", "scripts/sub", nil, "is not a file", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := WithCallIDs(context.Background(), CallIDs{Run: "r-1", Call: "c-1"})
			res := RunScript(ctx, dir, tc.script, tc.args)
			if res.IsError != tc.isErr || !strings.Contains(res.Text, tc.want) {
				t.Errorf("got error=%v %q, want error=%v and %q", res.IsError, res.Text, tc.isErr, tc.want)
			}
			if strings.Contains(res.Text, "escaped") || strings.Contains(res.Text, "sk-should-not-leak") {
				t.Errorf("escaped or leaked: %q", res.Text)
			}
		})
	}
}

func TestRunScriptPython(t *testing.T) {
	testbin.PythonFirst()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "scripts", "hello.py")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("import sys\nprint('py:', *sys.argv[1:])\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := RunScript(context.Background(), dir, "scripts/hello.py", []string{"a"}); res.IsError || res.Text != "py: a\n" {
		t.Errorf("got %+v", res)
	}
	// Executable without a #! line, as many published skills ship theirs:
	// the kernel would refuse it ("exec format error"); python3 runs it.
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if res := RunScript(context.Background(), dir, "scripts/hello.py", []string{"b"}); res.IsError || res.Text != "py: b\n" {
		t.Errorf("executable without #!: got %+v", res)
	}
}

// Module mode runs `python3 -m scripts.x` in the skill's folder with the
// folder on PYTHONPATH, so a module's imports of its siblings resolve.
func TestRunModule(t *testing.T) {
	testbin.PythonFirst()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	dir := t.TempDir()
	for name, body := range map[string]string{
		"scripts/helper.py":        "def greet(x):\n    return 'hello ' + x\n",
		"scripts/package_skill.py": "import os, sys\nfrom scripts.helper import greet\nprint(greet(sys.argv[1]), os.path.basename(os.getcwd()), os.environ['PYTHONPATH'] == os.getcwd())\n",
		"scripts/pkg/__main__.py":  "from scripts.helper import greet\nprint(greet('pkg'))\n",
		"scripts/data.txt":         "not a module\n",
		"top.py":                   "print('top')\n",
	} {
		p := filepath.Join(dir, "skill", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir = filepath.Join(dir, "skill")
	for _, tc := range []struct {
		name, module string
		args         []string
		want         string
		isErr        bool
	}{
		{"module file", "scripts.package_skill", []string{"world"}, "hello world skill True\n", false},
		{"package with __main__", "scripts.pkg", nil, "hello pkg\n", false},
		{"not an identifier", "scripts.package-skill", nil, "is not a Python module name", true},
		{"path instead of name", "scripts/package_skill.py", nil, "is not a Python module name", true},
		{"outside scripts", "top", nil, "not under the skill's scripts/ folder", true},
		{"missing", "scripts.nope", nil, "neither scripts/nope.py nor scripts/nope/__main__.py", true},
		{"data is no module", "scripts.data", nil, "no module", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := RunModule(context.Background(), dir, tc.module, tc.args)
			if res.IsError != tc.isErr || (tc.isErr && !strings.Contains(res.Text, tc.want)) || (!tc.isErr && res.Text != tc.want) {
				t.Errorf("got error=%v %q, want error=%v and %q", res.IsError, res.Text, tc.isErr, tc.want)
			}
		})
	}
}

// An untrusted skill's script is refused, naming the folder to --trust.
func TestRunScriptUntrusted(t *testing.T) {
	dir := scriptSkill(t)
	marker := filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(filepath.Join(dir, "scripts", "touch.sh"), []byte("touch "+marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := RunScript(context.Background(), dir, "scripts/touch.sh", nil, WithTrust(false), WithSkill("field"))
	if !res.IsError || !strings.Contains(res.Text, "--trust "+dir) || !strings.Contains(res.Text, "skill field") {
		t.Errorf("got %+v", res)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the untrusted script ran")
	}
}
