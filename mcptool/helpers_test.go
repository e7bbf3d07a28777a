package mcptool

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/fsdrun/fsd/internal/mcptest"
	"github.com/fsdrun/fsd/internal/sandbox"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tool"
)

func TestMain(m *testing.M) {
	mcptest.ServeIfAsked()
	if os.Getenv(envTaskServer) == "stdio" {
		serveTasksOnStdio()
	}
	if os.Getenv("FSD_MCPTOOL_PARENT") != "" {
		parent()
	}
	flag.Parse()
	// These tests mostly wait on the servers they start (node's reference
	// server, this binary over stdio).
	testpar.Widen(4)
	os.Exit(m.Run())
}

// stdioSkill is a skill whose server "t" is this test binary serving the
// test server on stdio.
func stdioSkill(t testing.TB, allow []string) *spec.Skill {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &spec.Skill{ID: "tracker", Version: "1.0.0", Dir: t.TempDir(), MCP: []spec.MCPServer{{
		Name: "t", Command: []string{exe, "-test.run=^$"}, Env: []string{mcptest.EnvServe, mcptest.EnvLog}, Tools: allow,
	}}}
}

func httpSkill(url string, allow []string) *spec.Skill {
	return &spec.Skill{ID: "tracker", Version: "1.0.0", Dir: ".", MCP: []spec.MCPServer{{Name: "t", URL: url, Tools: allow}}}
}

// env is the environment the pool reads: the stdio server switch and a
// call log in a temporary folder.
type env struct {
	log  string
	vars map[string]string
}

func newEnv(t testing.TB) *env {
	log := filepath.Join(t.TempDir(), "calls.log")
	return &env{log: log, vars: map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME"),
		mcptest.EnvServe: "stdio", mcptest.EnvLog: log,
	}}
}

func (e *env) lookup(k string) (string, bool) { v, ok := e.vars[k]; return v, ok }

// sandbox confines a server as a run does: its skill's folder readable,
// the call log's folder its workspace.
func (e *env) sandbox(s *spec.Skill, _ *spec.MCPServer) *sandbox.Policy {
	return &sandbox.Policy{Network: sandbox.NetOff, Workspace: filepath.Dir(e.log), Read: []string{s.Dir}}
}

// unconfined runs a server outside the sandbox, for the tests of how the
// pool stops its process: a sandboxed server's pid is its PID
// namespace's, which this process cannot look up (the sandbox's own
// tests kill its calls).
func unconfined(*spec.Skill, *spec.MCPServer) *sandbox.Policy { return nil }

// calls returns the call log's lines.
func (e *env) calls(t testing.TB) []string {
	b, err := os.ReadFile(e.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// newPool is a pool whose stdio servers run sandboxed with the call log's
// folder as their workspace, unless o says otherwise.
func newPool(t testing.TB, e *env, o Options) *Pool {
	o.LookupEnv = e.lookup
	if o.Sandbox == nil {
		o.Sandbox = e.sandbox
	}
	p := NewPool(o)
	t.Cleanup(p.Close)
	return p
}

func byName(ts []*Tool) map[string]*Tool {
	m := map[string]*Tool{}
	for _, t := range ts {
		m[t.Remote()] = t
	}
	return m
}

func call(t *Tool, args string) tool.Result {
	return t.Call(context.Background(), json.RawMessage(args), nil)
}

// fakeSpool keeps artifacts in memory.
type fakeSpool struct {
	mu   sync.Mutex
	kept map[string][]byte
}

func (f *fakeSpool) Keep(skillID, name string, data []byte) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.kept == nil {
		f.kept = map[string][]byte{}
	}
	h := fmt.Sprintf("h_%d", len(f.kept)+1)
	f.kept[h] = append([]byte(nil), data...)
	return h, nil
}

// parent is the test binary acting as fsd: it starts a stdio server,
// prints the server's pid and waits to be killed.
func parent() {
	e := &env{vars: map[string]string{"PATH": os.Getenv("PATH"), mcptest.EnvServe: "stdio", mcptest.EnvHang: "1"}}
	exe, _ := os.Executable()
	s := &spec.Skill{ID: "tracker", Version: "1.0.0", Dir: os.TempDir(), MCP: []spec.MCPServer{{
		Name: "t", Command: []string{exe, "-test.run=^$"}, Env: []string{mcptest.EnvServe, mcptest.EnvHang},
	}}}
	p := NewPool(Options{LookupEnv: e.lookup, Sandbox: unconfined})
	tools, notes := p.Acquire(context.Background(), s)
	if len(notes) > 0 {
		fmt.Println("notes:", notes)
		os.Exit(1)
	}
	res := call(byName(tools)["pid"], `{}`)
	fmt.Println(res.Text)
	bufio.NewReader(os.Stdin).ReadString('\n') // until killed
	os.Exit(0)
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
