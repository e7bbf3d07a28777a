package tool

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
		{"failure keeps status and stderr", "scripts/fail.sh", nil, "exit status 3\nstderr (last 4 KiB):\noops", true},
		{"no interpreter", "scripts/data.bin", nil, "not executable and has no #! line", true},
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
