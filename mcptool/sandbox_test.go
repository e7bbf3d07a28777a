package mcptool

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/sandbox"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/spec"
)

// A stdio server runs in its sandbox and works there: its tools answer,
// it writes in its workspace and nowhere else.
func TestStdioServerSandboxed(t *testing.T) {
	testpar.UnlessRace(t)
	if _, err := sandbox.Backend(); err != nil {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	e := newEnv(t)
	s := stdioSkill(t, nil)
	p := newPool(t, e, Options{})
	tools, notes := p.Acquire(context.Background(), s)
	if len(notes) > 0 {
		t.Fatalf("notes: %v", notes)
	}
	if r := call(byName(tools)["echo"], `{"text":"hi"}`); r.IsError || r.Text != "echo: hi" {
		t.Errorf("echo = %+v", r)
	}
	if got := e.calls(t); len(got) == 0 || !strings.HasPrefix(got[len(got)-1], "echo") {
		t.Errorf("the server's log in its workspace: %v", got)
	}

	// The same server with another workspace cannot write the log.
	e2 := newEnv(t)
	elsewhere := t.TempDir()
	p2 := newPool(t, e2, Options{Sandbox: func(s *spec.Skill, _ *spec.MCPServer) *sandbox.Policy {
		return &sandbox.Policy{Network: sandbox.NetOff, Workspace: elsewhere, Read: []string{s.Dir}}
	}})
	tools, _ = p2.Acquire(context.Background(), stdioSkill(t, nil))
	call(byName(tools)["echo"], `{"text":"hi"}`)
	if got := e2.calls(t); len(got) > 0 {
		t.Errorf("a sandboxed server wrote outside its workspace: %v", got)
	}
}

// Where no sandbox can be had, a stdio server does not start: the note
// says why, and its tools are not offered.
func TestStdioServerWithoutSandbox(t *testing.T) {
	testpar.UnlessRace(t)
	e := newEnv(t)
	s := stdioSkill(t, nil)
	p := newPool(t, e, Options{Wrap: func(*exec.Cmd, sandbox.Policy) (func(), error) {
		return nil, fmt.Errorf("%w: tests asked for none", sandbox.ErrUnavailable)
	}})
	tools, notes := p.Acquire(context.Background(), s)
	if len(tools) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "not started: no sandbox is available") {
		t.Errorf("tools %d, notes %v; want none and the sandbox's error", len(tools), notes)
	}
	if st := p.Stats(s, "t"); st.Starts != 0 {
		t.Errorf("the server started %d times without a sandbox", st.Starts)
	}
	if got := e.calls(t); len(got) > 0 {
		t.Errorf("the server ran: %v", got)
	}
}
