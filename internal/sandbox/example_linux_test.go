package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/fsdrun/fsd/internal/sandbox"
)

// A program confined to its workspace, with the network off: Wrap
// rewrites the prepared command, cleanup runs once it has been waited
// for, and a failed program's stderr may say what the sandbox denied.
func ExampleWrap() {
	ws, _ := os.MkdirTemp("", "workspace-")
	defer os.RemoveAll(ws)
	cmd := exec.Command("/bin/sh", "-c", "echo hi > note.txt; echo bye > /etc/motd")
	cmd.Dir = ws
	p := sandbox.Policy{Workspace: ws, Network: sandbox.NetOff, MaxProcs: 32}
	cleanup, err := sandbox.Wrap(cmd, p)
	if err != nil {
		fmt.Println(err) // no sandbox here: the program does not run
		return
	}
	defer cleanup()
	out, err := cmd.CombinedOutput()
	if err != nil {
		fmt.Println(sandbox.Explain(string(out), p))
	}
}
