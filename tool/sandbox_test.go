package tool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/sandbox"
)

// noSandbox is a machine where no sandbox can be had.
func noSandbox(*exec.Cmd, sandbox.Policy) (func(), error) {
	return nil, fmt.Errorf("%w: tests asked for none; install bubblewrap, or set `sandbox: off` in the workflow", sandbox.ErrUnavailable)
}

// Where no sandbox can be had, a command tool and a script answer a tool
// error saying so and nothing runs; `sandbox: off` (no policy) runs them.
func TestSandboxFailsClosed(t *testing.T) {
	dir := scriptSkill(t)
	marker := filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(filepath.Join(dir, "scripts", "mark.sh"), []byte("touch \"$1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmdTool, err := Compile(command("sh", "-c", "touch "+marker), dir, WithWrap(noSandbox))
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() Result{
		"command": func() Result { return cmdTool.Call(context.Background(), nil, nil) },
		"script": func() Result {
			return RunScript(context.Background(), dir, "scripts/mark.sh", []string{marker}, WithWrap(noSandbox))
		},
	} {
		res := call()
		if !res.IsError || !strings.Contains(res.Text, "did not run: no sandbox is available") || !strings.Contains(res.Text, "`sandbox: off`") {
			t.Errorf("%s: got %+v, want the sandbox's error", name, res)
		}
		if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s ran without a sandbox: %v", name, err)
		}
	}

	off, err := Compile(command("sh", "-c", "touch "+marker), dir, WithWrap(noSandbox), WithSandbox(nil))
	if err != nil {
		t.Fatal(err)
	}
	if res := off.Call(context.Background(), nil, nil); res.IsError {
		t.Fatalf("sandbox: off: %+v", res)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("sandbox: off did not run the program: %v", err)
	}
}

// A program the sandbox stops from writing outside the workspace fails,
// the file is not written, and the model reads which setting allows it.
func TestSandboxDenialExplained(t *testing.T) {
	if _, err := sandbox.Backend(); err != nil {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	dir := scriptSkill(t)
	work := t.TempDir()
	outside := filepath.Join(dir, "written.txt") // the skill's folder: readable, not writable
	p := &sandbox.Policy{Network: sandbox.NetOff, Workspace: work, Read: []string{dir}}
	tl, err := Compile(command("sh", "-c", "echo in > "+filepath.Join(work, "ok.txt")+" && echo out > "+outside), dir, WithSandbox(p))
	if err != nil {
		t.Fatal(err)
	}
	res := tl.Call(context.Background(), nil, nil)
	if !res.IsError || !strings.Contains(res.Text, "exited with status") || !strings.Contains(res.Text, "sandbox: {write: [") {
		t.Errorf("got %+v, want the exit status and the setting that allows the write", res)
	}
	if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sandboxed program wrote %s: %v", outside, err)
	}
	if b, err := os.ReadFile(filepath.Join(work, "ok.txt")); err != nil || string(b) != "in\n" {
		t.Errorf("the workspace write: %q, %v", b, err)
	}
}
